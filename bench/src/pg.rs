//! LetheDB on PostgreSQL under test: a fresh database for every start, and one or more
//! instances serving it.
//!
//! The server keeps its tables in a fixed schema (`lethedb`), so a clean store means a
//! database of its own: [`PgServers::start`] creates `lethe_bench_<pid>_<n>` with `psql` on the
//! server the given URL points at, starts the instances on it one after the other (the first
//! creates the schema), and [`PgServers::stop`] stops them and drops the database. The URL
//! reaches the servers in `LETHEDB_POSTGRES`, never on their command line. This module runs no
//! workload.

use crate::cosmos::{Client, Endpoint};
use crate::server_snapshot::get_json;
use crate::servers::{Kind, Launch, Server};
use anyhow::{bail, Context as _};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Databases created by this run so far (their names are numbered).
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// `url` with its database replaced by `database` (URL form only:
/// `postgresql://user[:password]@host[:port][/database][?options]`).
pub fn with_database(url: &str, database: &str) -> anyhow::Result<String> {
    let (base, options) = match url.split_once('?') {
        Some((base, options)) => (base, Some(options)),
        None => (url, None),
    };
    let Some(scheme_end) = base.find("://").map(|at| at + 3) else {
        bail!("the PostgreSQL URL must look like postgresql://user@host:port/database");
    };
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |at| scheme_end + at);
    let mut out = format!("{}/{database}", &base[..path_start]);
    if let Some(options) = options {
        out.push('?');
        out.push_str(options);
    }
    Ok(out)
}

/// `url` without its password, and the password (percent-decoded), so that `psql` can take
/// the password from its environment rather than from its command line.
fn split_password(url: &str) -> (String, Option<String>) {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return (url.to_string(), None);
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?'])
        .map_or(url.len(), |at| scheme_end + at);
    let authority = &url[scheme_end..authority_end];
    let Some((credentials, host)) = authority.rsplit_once('@') else {
        return (url.to_string(), None);
    };
    let Some((user, password)) = credentials.split_once(':') else {
        return (url.to_string(), None);
    };
    let stripped = format!(
        "{}{user}@{host}{}",
        &url[..scheme_end],
        &url[authority_end..]
    );
    (stripped, Some(percent_decode(password)))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|digits| u8::from_str_radix(digits, 16).ok());
        if let Some(byte) = hex {
            out.push(byte);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs one statement with `psql` against `url` and fails with its message if it fails.
fn psql(url: &str, statement: &str) -> anyhow::Result<()> {
    let (url, password) = split_password(url);
    let mut command = Command::new("psql");
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    let output = command
        .arg("--no-psqlrc")
        .arg("--quiet")
        .arg("-v")
        .arg("ON_ERROR_STOP=1")
        .arg("--dbname")
        .arg(&url)
        .arg("--command")
        .arg(statement)
        .output()
        .context("cannot run psql (is the PostgreSQL client installed?)")?;
    if !output.status.success() {
        bail!(
            "psql failed on `{statement}`: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Instances of LetheDB serving one fresh PostgreSQL database.
pub struct PgServers {
    pub servers: Vec<Server>,
    /// The URL the run was given (the databases are created and dropped through it).
    admin_url: String,
    database: String,
    /// The URL of the run's database.
    pub url: String,
}

impl PgServers {
    /// Creates a database and starts `instances` servers on it, each told it is one of
    /// `instances` (`--throughput-instances`). `extra_args` go to every `lethedb serve`.
    pub async fn start(
        launch: &Launch,
        on_started: &mut dyn FnMut(&Server),
        name: &str,
        instances: usize,
        extra_args: &[&str],
    ) -> anyhow::Result<PgServers> {
        let Some(admin_url) = launch.postgres.clone() else {
            bail!("no PostgreSQL URL was given");
        };
        let database = format!(
            "lethe_bench_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        psql(&admin_url, &format!("CREATE DATABASE {database}"))?;
        let url = with_database(&admin_url, &database)?;
        let mut cluster = PgServers {
            servers: Vec::new(),
            admin_url,
            database,
            url: url.clone(),
        };
        let count = instances.max(1).to_string();
        let mut args = vec!["--throughput-instances", count.as_str()];
        args.extend_from_slice(extra_args);
        for instance in 0..instances.max(1) {
            let started = launch
                .start_with_env(
                    Kind::LetheDbPg,
                    &format!("{name}-{instance}"),
                    &args,
                    &[("LETHEDB_POSTGRES", url.as_str())],
                )
                .await;
            match started {
                Ok(server) => {
                    on_started(&server);
                    cluster.servers.push(server);
                }
                Err(error) => {
                    let _ = cluster.stop();
                    return Err(error);
                }
            }
        }
        Ok(cluster)
    }

    pub fn endpoints(&self) -> Vec<Arc<Endpoint>> {
        self.servers
            .iter()
            .map(|s| Arc::clone(&s.endpoint))
            .collect()
    }

    pub fn log_paths(&self) -> Vec<PathBuf> {
        self.servers.iter().map(|s| s.log_path.clone()).collect()
    }

    /// The instances' peak resident sets, added up (bytes).
    pub fn peak_rss_bytes(&self) -> u64 {
        self.servers.iter().map(|s| s.memory().peak_rss_bytes).sum()
    }

    /// Writes per PostgreSQL write transaction over all instances, from their stats routes.
    pub async fn writes_per_commit(&self) -> Option<f64> {
        let (mut operations, mut commits) = (0.0, 0.0);
        for server in &self.servers {
            let mut client = Client::new(Arc::clone(&server.endpoint));
            let stats = get_json(&mut client, "/_lethedb/stats").await.ok()?;
            operations += stats["writer"]["operations"].as_f64()?;
            commits += stats["writer"]["commits"].as_f64()?;
        }
        (commits > 0.0).then(|| operations / commits)
    }

    /// Stops every instance, then drops the database.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let mut outcome = Ok(());
        for server in self.servers.drain(..) {
            if let Err(error) = server.stop() {
                outcome = Err(error);
            }
        }
        let dropped = psql(
            &self.admin_url,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.database),
        );
        outcome.and(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::{split_password, with_database};

    #[test]
    fn the_database_of_a_url_is_replaced() {
        let cases = [
            ("postgresql://u@h:5432/postgres", "postgresql://u@h:5432/x"),
            ("postgresql://u@h:5432", "postgresql://u@h:5432/x"),
            (
                "postgres://u:p@h/db?sslmode=disable",
                "postgres://u:p@h/x?sslmode=disable",
            ),
        ];
        for (url, expected) in cases {
            assert_eq!(with_database(url, "x").unwrap(), expected);
        }
        assert!(with_database("host=h dbname=d", "x").is_err());
    }

    #[test]
    fn the_password_leaves_the_url() {
        assert_eq!(
            split_password("postgresql://u:p%40ss@h:1/d?x=y"),
            (
                "postgresql://u@h:1/d?x=y".to_string(),
                Some("p@ss".to_string())
            )
        );
        assert_eq!(
            split_password("postgresql://u@h/d"),
            ("postgresql://u@h/d".to_string(), None)
        );
    }
}
