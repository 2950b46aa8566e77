//! The keys that decide who may reach the daemon and how: the exposure check (tokens and TLS
//! beyond loopback, unless `--insecure`), token lengths, the TLS key pair, whether bare (legacy)
//! worker requests are accepted, the socket send timeout.

use super::{Config, ConfigError};

/// Where the environment may override a secret (the model keys: see `llm.rs`).
pub const ENV_API_TOKEN: &str = "AGENT_CONTROLLER_TOKEN";
pub const ENV_WORKER_TOKEN: &str = "AGENT_CONTROLLER_WORKER_TOKEN";

/// The shortest token accepted on a non-loopback bind.
pub const MIN_TOKEN_CHARS: usize = 16;

impl Config {
    /// Refuse a non-loopback bind that nothing protects: both tokens and TLS, unless
    /// `--insecure` says something else guards the ports.
    pub fn check_exposure(&self, insecure: bool) -> Result<(), ConfigError> {
        if self.binds_loopback() || insecure {
            return Ok(());
        }
        // Both: an open worker port lets anyone pose as a worker and receive its commands,
        // including the password perform_login types.
        for (key, token, env) in [
            ("server.api_token", &self.server.api_token, ENV_API_TOKEN),
            ("server.worker_token", &self.server.worker_token, ENV_WORKER_TOKEN),
        ] {
            if token.is_empty() {
                return Err(ConfigError::key(
                    key,
                    format!(
                        "is empty, but {} is reachable from other machines. Set it (or {env}), or pass \
                         --insecure if something else guards the ports.",
                        self.server.host
                    ),
                ));
            }
        }
        // Without TLS the tokens, and the passwords perform_login sends, cross the network in clear.
        if !self.tls() {
            return Err(ConfigError::key(
                "server.tls_cert",
                format!(
                    "is empty, but {} is reachable from other machines and the tokens would travel in \
                     clear. Set server.tls_cert and server.tls_key (README: TLS), or pass --insecure if \
                     something else encrypts the traffic.",
                    self.server.host
                ),
            ));
        }
        Ok(())
    }

    /// Whether both ports serve HTTPS.
    pub fn tls(&self) -> bool {
        !self.server.tls_cert.as_os_str().is_empty()
    }

    /// The URL scheme both ports speak.
    pub fn scheme(&self) -> &'static str {
        if self.tls() { "https" } else { "http" }
    }

    /// The certificate and its key come together (their contents are read at start).
    pub(super) fn validate_tls(&self) -> Result<(), ConfigError> {
        match (self.server.tls_cert.as_os_str().is_empty(), self.server.tls_key.as_os_str().is_empty()) {
            (true, false) => Err(ConfigError::key("server.tls_cert", "must be set when server.tls_key is")),
            (false, true) => Err(ConfigError::key("server.tls_key", "must be set when server.tls_cert is")),
            _ => Ok(()),
        }
    }

    /// Beyond loopback a token is guessable under 16 characters.
    pub(super) fn validate_token_lengths(&self) -> Result<(), ConfigError> {
        if self.binds_loopback() {
            return Ok(());
        }
        for (key, token) in
            [("server.api_token", &self.server.api_token), ("server.worker_token", &self.server.worker_token)]
        {
            if !token.is_empty() && token.expose().chars().count() < MIN_TOKEN_CHARS {
                return Err(ConfigError::key(
                    key,
                    format!("must be at least {MIN_TOKEN_CHARS} characters when the host is not loopback"),
                ));
            }
        }
        Ok(())
    }

    /// `server.io_timeout_s`, or 30 s past the longest poll a connection may sit in.
    pub fn io_timeout(&self) -> std::time::Duration {
        let auto = self.server.long_poll_s.max(60) + 30;
        std::time::Duration::from_secs(if self.server.io_timeout_s == 0 { auto } else { self.server.io_timeout_s })
    }

    /// Whether bare worker requests (no `worker_id`) are accepted: `server.legacy_workers`, by
    /// default on for a loopback bind (the seed's one-host setup) and off otherwise.
    pub fn legacy_workers(&self) -> bool {
        self.server.legacy_workers.unwrap_or_else(|| self.binds_loopback())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::secret::Secret;

    #[test]
    fn short_tokens_are_refused_beyond_loopback() {
        let mut c = Config::default();
        c.server.api_token = Secret::new("a");
        c.server.worker_token = Secret::new("b");
        c.validate().unwrap();
        assert!(c.legacy_workers());
        c.server.host = "0.0.0.0".into();
        assert!(!c.legacy_workers());
        assert!(c.validate().unwrap_err().to_string().contains("server.api_token"));
        c.server.api_token = Secret::new("0123456789abcdef");
        assert!(c.validate().unwrap_err().to_string().contains("server.worker_token"));
        c.server.worker_token = Secret::new("fedcba9876543210");
        c.validate().unwrap();
        c.server.legacy_workers = Some(true);
        assert!(c.legacy_workers());
    }
}
