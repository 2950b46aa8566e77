//! A real `sshd` for the SSH tests: started by the test on a free loopback port with a
//! throw-away host key and an authorized key of its own, as the current user, and killed when
//! dropped. Tests say SKIPPED and return when OpenSSH's server is not installed.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::{ChildGuard, TempDir};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    pub port: u16,
    pub user: String,
    /// The client's private key.
    pub key: PathBuf,
    pub dir: TempDir,
    _child: ChildGuard,
}

fn keygen(path: &std::path::Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "ssh-keygen failed");
}

/// Who the tests log in as. As root (CI), a user of our own whose login shell is /bin/sh, so
/// no shell startup file of the machine's (root's pyenv hooks, say) runs in every command;
/// otherwise the current user.
fn login_user() -> String {
    let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
    if me != "root" {
        return me;
    }
    let exists =
        Command::new("id").arg(TEST_USER).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap().success();
    if !exists {
        // Two tests may race to create it: whoever loses finds it there.
        let _ = Command::new("useradd")
            .args(["-M", "-d", "/tmp", "-s", "/bin/sh", TEST_USER])
            .stderr(Stdio::null())
            .status();
    }
    TEST_USER.to_string()
}

const TEST_USER: &str = "ac-ssh-test";

/// A folder the login user can write into.
pub fn shared_dir(parent: &std::path::Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

impl Sshd {
    pub fn start() -> Option<Sshd> {
        if !std::path::Path::new(SSHD).exists() {
            eprintln!("SKIPPED: {SSHD} is not installed (make test installs openssh-server)");
            return None;
        }
        let dir = TempDir::new("sshd");
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let user =
            String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
             LogLevel ERROR\nSetEnv SHLVL=1\n",
            d = d.display()
        );
        // `SetEnv SHLVL=1`: bash reads the account's ~/.bashrc for every command sshd runs unless
        // it looks nested. That file is the machine's, not the test's: on CI it runs `pyenv
        // rehash` under a lock, which queues the parallel tests' commands past their timeouts.
        std::fs::write(d.join("sshd_config"), config).unwrap();
        // Privilege separation needs this folder when sshd runs as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let guard = ChildGuard(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not start on port {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Sshd { port, user, key: d.join("client_key"), dir, _child: guard })
    }

    /// Stop the server (connections it already serves go on until they are closed).
    pub fn stop(&mut self) {
        let _ = self._child.0.kill();
        let _ = self._child.0.wait();
    }

    pub fn target(&self) -> String {
        format!("ssh://{}@127.0.0.1:{}", self.user, self.port)
    }
}
