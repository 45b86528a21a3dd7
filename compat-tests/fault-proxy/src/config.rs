//! Proxy configuration: the serde structs and the command-line parser.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Where the proxy listens, where it forwards to, and which faults it injects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyConfig {
    /// Base URL of the DynamoDB-compatible server, e.g. `http://127.0.0.1:4566` (http only).
    pub upstream: String,
    /// Listen address; must be a loopback address, port 0 lets the OS choose.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The fault settings (flattened into the same JSON object).
    #[serde(flatten)]
    pub faults: FaultConfig,
}

fn default_listen() -> String {
    "127.0.0.1:0".to_string()
}

/// The fault settings; replaceable at runtime (`POST /__proxy/config`, [`crate::ProxyHandle::set_config`]).
///
/// Every missing JSON field takes its default, which injects no fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Seed of the single RNG all random choices come from (re-seeded on every config change).
    pub seed: u64,
    /// Maximum staleness of an eventually consistent read, in ms (0 = reads are never stale).
    pub stale_ms: u64,
    /// Minimum staleness of a stale read, in ms (staleness is uniform in `[stale_min_ms, stale_ms]`).
    pub stale_min_ms: u64,
    /// Chance that an eventually consistent read (per item) is stale at all.
    pub stale_probability: f64,
    /// Chance that a request is forwarded but its response is dropped (connection closed).
    pub drop_response_rate: f64,
    /// Operations the drop fault applies to (empty = all).
    pub drop_ops: Vec<String>,
    /// Chance that a request is answered 400 ProvisionedThroughputExceededException without forwarding.
    pub throttle_rate: f64,
    /// Operations the throttle fault applies to (empty = all).
    pub throttle_ops: Vec<String>,
    /// Chance that a request is answered 500 InternalServerError without forwarding.
    pub error_500_rate: f64,
    /// Operations the 500 fault applies to (empty = all).
    pub error_500_ops: Vec<String>,
    /// Chance that a request is dropped before it is forwarded (connection closed, nothing written).
    pub drop_request_rate: f64,
    /// Operations the request-drop fault applies to (empty = all).
    pub drop_request_ops: Vec<String>,
    /// Chance that a request is forwarded (the write lands) and the connection is then reset (RST)
    /// instead of answered.
    pub reset_response_rate: f64,
    /// Operations the reset fault applies to (empty = all).
    pub reset_ops: Vec<String>,
    /// Delay between the upstream's answer (the write has landed) and the answer to the client, in
    /// ms: a client whose attempt timeout is shorter gives up on a committed write.
    pub delay_response_ms: u64,
    /// Operations the response delay applies to (empty = all).
    pub delay_response_ops: Vec<String>,
    /// Fixed delay added before every DynamoDB request is handled, in ms.
    pub latency_ms: u64,
    /// Extra delay, uniform in `[0, latency_jitter_ms]`, added on top of `latency_ms`.
    pub latency_jitter_ms: u64,
    /// Operations the latency applies to (empty = all).
    pub latency_ops: Vec<String>,
    /// Key attribute used for PutItem items when the table's key schema cannot be learned.
    pub key_attribute: String,
    /// Scripted faults, per operation: the next requests of that operation get these faults in
    /// order (`ok`, `drop`, `reset`, `drop_request`, `throttle`, `error500`, `delay`,
    /// `replicated_conflict`: 400 `ReplicatedWriteConflictException`, not forwarded), before the
    /// random faults take over. Deterministic where a test needs one exact sequence.
    pub sequence: BTreeMap<String, Vec<String>>,
    /// Record every forwarded write and its answer (`GET /__proxy/journal`), forwarding writes to
    /// one item one at a time so the journal has them in commit order.
    pub journal: bool,
    /// Request headers dropped before forwarding, per HTTP method (`{"DELETE": ["if-match"]}`;
    /// both compared without case): the server then sees a request without that condition, as
    /// if it ignored it, the way some S3-compatible stores ignore `If-Match` on DeleteObject.
    /// Everything else is forwarded as the client sent it.
    pub strip_headers: BTreeMap<String, Vec<String>>,
    /// Operations answered 400 `AccessDeniedException`, not forwarded: a least-privilege IAM
    /// policy without them (`["DescribeTable"]`).
    pub deny_ops: Vec<String>,
    /// Fields merged into the `Table` of every `DescribeTable` answer, as a global table's would
    /// show them: `{"Replicas": [{"RegionName": "eu-west-1"}], "MultiRegionConsistency":
    /// "STRONG"}` (no local server has global tables).
    pub describe_table: serde_json::Map<String, serde_json::Value>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            stale_ms: 0,
            stale_min_ms: 0,
            stale_probability: 1.0,
            drop_response_rate: 0.0,
            drop_ops: Vec::new(),
            throttle_rate: 0.0,
            throttle_ops: Vec::new(),
            error_500_rate: 0.0,
            error_500_ops: Vec::new(),
            drop_request_rate: 0.0,
            drop_request_ops: Vec::new(),
            reset_response_rate: 0.0,
            reset_ops: Vec::new(),
            delay_response_ms: 0,
            delay_response_ops: Vec::new(),
            latency_ms: 0,
            latency_jitter_ms: 0,
            latency_ops: Vec::new(),
            key_attribute: "key".to_string(),
            sequence: BTreeMap::new(),
            journal: false,
            strip_headers: BTreeMap::new(),
            deny_ops: Vec::new(),
            describe_table: serde_json::Map::new(),
        }
    }
}

impl FaultConfig {
    /// Checks ranges: rates in `[0, 1]`, `stale_min_ms <= stale_ms`, a non-empty key attribute.
    pub fn validate(&self) -> Result<(), Error> {
        let rates = [
            ("stale_probability", self.stale_probability),
            ("drop_response_rate", self.drop_response_rate),
            ("throttle_rate", self.throttle_rate),
            ("error_500_rate", self.error_500_rate),
            ("drop_request_rate", self.drop_request_rate),
            ("reset_response_rate", self.reset_response_rate),
        ];
        for (name, v) in rates {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::Config(format!(
                    "{name} must be within [0, 1], got {v}"
                )));
            }
        }
        if self.stale_min_ms > self.stale_ms {
            return Err(Error::Config(format!(
                "stale_min_ms ({}) must not exceed stale_ms ({})",
                self.stale_min_ms, self.stale_ms
            )));
        }
        for (op, faults) in &self.sequence {
            if let Some(bad) = faults
                .iter()
                .find(|f| !SEQUENCE_FAULTS.contains(&f.as_str()))
            {
                return Err(Error::Config(format!(
                    "sequence for {op}: unknown fault {bad:?}; use one of {SEQUENCE_FAULTS:?}"
                )));
            }
        }
        if self.key_attribute.is_empty() {
            return Err(Error::Config("key_attribute must not be empty".into()));
        }
        for (method, names) in &self.strip_headers {
            if method.is_empty() || names.iter().any(String::is_empty) {
                return Err(Error::Config(format!(
                    "strip_headers: a method and its header names must not be empty (got \
                     {method:?}: {names:?})"
                )));
            }
        }
        Ok(())
    }

    /// Adds `header` to the request headers dropped from `method` requests
    /// ([`FaultConfig::strip_headers`]).
    pub fn stripping(mut self, method: &str, header: &str) -> Self {
        self.strip_headers
            .entry(method.to_ascii_uppercase())
            .or_default()
            .push(header.to_ascii_lowercase());
        self
    }

    /// The request headers dropped from `method` requests.
    pub(crate) fn stripped_from(&self, method: &str) -> &[String] {
        self.strip_headers
            .iter()
            .find(|(m, _)| m.eq_ignore_ascii_case(method))
            .map_or(&[], |(_, names)| names.as_slice())
    }

    /// Whether eventually consistent reads can be stale under this config.
    pub fn stale_enabled(&self) -> bool {
        self.stale_ms > 0 && self.stale_probability > 0.0
    }
}

/// The faults a [`FaultConfig::sequence`] can name.
pub const SEQUENCE_FAULTS: [&str; 8] = [
    "ok",
    "drop",
    "reset",
    "drop_request",
    "throttle",
    "error500",
    "delay",
    "replicated_conflict",
];

/// Usage text of the `fault-proxy` binary.
pub const USAGE: &str = "\
usage: fault-proxy --upstream URL [options]

Forwards DynamoDB JSON 1.0 requests to URL and injects faults.
Prints `listening http://127.0.0.1:PORT` as its first stdout line;
on SIGTERM/SIGINT prints the final stats JSON and exits.

options:
  --upstream URL               DynamoDB-compatible server (required; also $DDBLOCK_PROXY_UPSTREAM)
  --listen ADDR                loopback address to bind (default 127.0.0.1:0)
  --seed N                     RNG seed (default 0)
  --stale-ms N                 max staleness of eventual reads in ms (default 0 = off)
  --stale-min-ms N             min staleness of a stale read in ms (default 0)
  --stale-probability F        chance an eventual read is stale (default 1.0)
  --drop-response-rate F       chance a forwarded request's response is dropped (default 0)
  --drop-ops A,B               operations the drop fault applies to (default all)
  --throttle-rate F            chance of a 400 ProvisionedThroughputExceededException (default 0)
  --throttle-ops A,B           operations throttling applies to (default all)
  --error-500-rate F           chance of a 500 InternalServerError (default 0)
  --error-500-ops A,B          operations the 500 fault applies to (default all)
  --latency-ms N               fixed added latency in ms (default 0)
  --latency-jitter-ms N        extra uniform latency in [0, N] ms (default 0)
  --key-attribute NAME         PutItem key attribute if the key schema is unknown (default key)
  --journal                    record every forwarded write and its answer (GET /__proxy/journal)
  --deny-ops A,B               operations answered 400 AccessDeniedException (default none)
  --strip-header METHOD:NAME   drop request header NAME from METHOD requests (repeatable), e.g.
                               DELETE:If-Match: a server that ignores that condition
  --config-json JSON           a whole ProxyConfig as JSON (flags after it override it)
  -h, --help                   this text
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Run the proxy with this config.
    Run(Box<ProxyConfig>),
    /// Print the usage text.
    Help,
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, Error> {
    v.parse()
        .map_err(|_| Error::Config(format!("{flag}: invalid value {v:?}")))
}

fn parse_ops(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Parses the command-line flags (without the program name) into a [`Command`].
pub fn parse_args<I, S>(args: I) -> Result<Command, Error>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut upstream: Option<String> = None;
    let mut listen: Option<String> = None;
    let mut faults = FaultConfig::default();
    let mut args = args.into_iter().map(Into::into);
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if !flag.starts_with("--") {
            return Err(Error::Config(format!("unexpected argument {arg:?}")));
        }
        if flag == "--journal" && inline.is_none() {
            faults.journal = true;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .ok_or_else(|| Error::Config(format!("{flag} needs a value")))?,
        };
        let f = &flag;
        match flag.as_str() {
            "--upstream" => upstream = Some(value),
            "--listen" => listen = Some(value),
            "--seed" => faults.seed = parse_num(f, &value)?,
            "--stale-ms" => faults.stale_ms = parse_num(f, &value)?,
            "--stale-min-ms" => faults.stale_min_ms = parse_num(f, &value)?,
            "--stale-probability" => faults.stale_probability = parse_num(f, &value)?,
            "--drop-response-rate" => faults.drop_response_rate = parse_num(f, &value)?,
            "--drop-ops" => faults.drop_ops = parse_ops(&value),
            "--throttle-rate" => faults.throttle_rate = parse_num(f, &value)?,
            "--throttle-ops" => faults.throttle_ops = parse_ops(&value),
            "--error-500-rate" => faults.error_500_rate = parse_num(f, &value)?,
            "--error-500-ops" => faults.error_500_ops = parse_ops(&value),
            "--latency-ms" => faults.latency_ms = parse_num(f, &value)?,
            "--latency-jitter-ms" => faults.latency_jitter_ms = parse_num(f, &value)?,
            "--key-attribute" => faults.key_attribute = value,
            "--deny-ops" => faults.deny_ops = parse_ops(&value),
            "--journal" => faults.journal = parse_num(f, &value)?,
            "--strip-header" => {
                let (method, name) = value.split_once(':').ok_or_else(|| {
                    Error::Config(format!("{flag}: expected METHOD:NAME, got {value:?}"))
                })?;
                faults = faults.stripping(method.trim(), name.trim());
            }
            "--config-json" => {
                let c: ProxyConfig = serde_json::from_str(&value)
                    .map_err(|e| Error::Config(format!("--config-json: {e}")))?;
                upstream = Some(c.upstream);
                listen = Some(c.listen);
                faults = c.faults;
            }
            _ => return Err(Error::Config(format!("unknown flag {flag}"))),
        }
    }
    let upstream = match upstream {
        Some(u) => u,
        None => std::env::var("DDBLOCK_PROXY_UPSTREAM")
            .map_err(|_| Error::Config("--upstream URL is required".into()))?,
    };
    let config = ProxyConfig {
        upstream,
        listen: listen.unwrap_or_else(default_listen),
        faults,
    };
    config.faults.validate()?;
    Ok(Command::Run(Box::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_flags() {
        let cmd = parse_args([
            "--upstream",
            "http://127.0.0.1:9",
            "--listen=127.0.0.1:5555",
            "--seed",
            "7",
            "--stale-ms",
            "300",
            "--stale-min-ms",
            "100",
            "--stale-probability",
            "0.5",
            "--drop-response-rate",
            "0.1",
            "--drop-ops",
            "PutItem, DeleteItem",
            "--throttle-rate",
            "0.2",
            "--throttle-ops",
            "GetItem",
            "--error-500-rate",
            "0.3",
            "--error-500-ops",
            "UpdateItem",
            "--latency-ms",
            "5",
            "--latency-jitter-ms",
            "2",
            "--key-attribute",
            "pk",
            "--strip-header",
            "delete:If-Match",
            "--strip-header=PUT:if-none-match",
        ])
        .unwrap();
        let Command::Run(c) = cmd else {
            panic!("expected Run")
        };
        assert_eq!(c.upstream, "http://127.0.0.1:9");
        assert_eq!(c.listen, "127.0.0.1:5555");
        let f = c.faults;
        assert_eq!((f.seed, f.stale_ms, f.stale_min_ms), (7, 300, 100));
        assert_eq!(f.stale_probability, 0.5);
        assert_eq!(f.drop_response_rate, 0.1);
        assert_eq!(f.drop_ops, vec!["PutItem", "DeleteItem"]);
        assert_eq!((f.throttle_rate, f.error_500_rate), (0.2, 0.3));
        assert_eq!(f.throttle_ops, vec!["GetItem"]);
        assert_eq!(f.error_500_ops, vec!["UpdateItem"]);
        assert_eq!((f.latency_ms, f.latency_jitter_ms), (5, 2));
        assert_eq!(f.key_attribute, "pk");
        assert_eq!(f.stripped_from("DELETE"), ["if-match"]);
        assert_eq!(f.stripped_from("put"), ["if-none-match"]);
        assert!(f.stripped_from("GET").is_empty());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse_args(["--upstream", "http://x", "--throttle-rate", "1.5"]).is_err());
        assert!(parse_args(["--upstream", "http://x", "--stale-ms", "abc"]).is_err());
        assert!(parse_args(["--upstream", "http://x", "--stale-min-ms", "5"]).is_err());
        assert!(parse_args(["--upstream", "http://x", "--bogus", "1"]).is_err());
        assert!(parse_args(["--upstream"]).is_err());
        assert!(parse_args(["--upstream", "http://x", "--strip-header", "if-match"]).is_err());
        assert!(parse_args(["--upstream", "http://x", "--strip-header", "DELETE:"]).is_err());
        assert_eq!(parse_args(["--help"]).unwrap(), Command::Help);
    }

    #[test]
    fn json_config_defaults_and_unknown_fields() {
        let c: ProxyConfig =
            serde_json::from_str(r#"{"upstream":"http://u","throttle_rate":0.25}"#).unwrap();
        assert_eq!(c.listen, "127.0.0.1:0");
        assert_eq!(c.faults.throttle_rate, 0.25);
        assert_eq!(c.faults.stale_probability, 1.0);
        assert!(serde_json::from_str::<FaultConfig>(r#"{"throttle_rte":0.25}"#).is_err());
        let f: FaultConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(f, FaultConfig::default());
    }
}
