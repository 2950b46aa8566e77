//! The config's own checks: defaults, named keys and values, the environment, exposure.

use super::*;

#[test]
fn empty_is_defaults() {
    let c = Config::from_yaml("").unwrap();
    assert_eq!(c.server.api_port, 5900);
    assert_eq!(c.task.confirmation_timeout, 300);
    c.validate().unwrap();
}

#[test]
fn unknown_key_is_named() {
    let e = Config::from_yaml("server:\n  api_prot: 1\n").unwrap_err();
    assert!(e.to_string().contains("api_prot"), "{e}");
    let e = Config::from_yaml("nonsense: 1\n").unwrap_err();
    assert!(e.to_string().contains("nonsense"), "{e}");
}

#[test]
fn the_evals_boundary_switch_is_no_key_of_the_file() {
    assert!(!Config::from_yaml("").unwrap().agent.eval_no_boundary);
    let e = Config::from_yaml("agent:\n  eval_no_boundary: true\n").unwrap_err();
    assert!(e.to_string().contains("eval_no_boundary"), "only `eval --no-boundary` sets it: {e}");
}

#[test]
fn bad_value_is_named() {
    let e = Config::from_yaml("server:\n  api_port: lots\n").unwrap_err();
    assert!(e.to_string().contains("server.api_port"), "{e}");
    let e = Config::from_yaml("output:\n  sync: sometimes\n").unwrap_err();
    assert!(e.to_string().contains("output.sync"), "{e}");
    let c = Config::from_yaml("output:\n  sync: always\n").unwrap();
    assert_eq!(c.output.sync, crate::protocol::SyncPolicy::Always);
    let mut c = Config::default();
    c.logging.level = "loud".into();
    assert!(c.validate().unwrap_err().to_string().contains("logging.level"));
}

#[test]
fn env_overrides_secrets() {
    let mut c = Config::default();
    c.apply_env(|k| (k == ENV_API_TOKEN).then(|| "tok".to_string()));
    assert_eq!(c.server.api_token.expose(), "tok");
    assert!(c.server.worker_token.is_empty());
}

#[test]
fn exposure_needs_a_token() {
    let mut c = Config::default();
    c.server.host = "0.0.0.0".into();
    assert!(c.check_exposure(false).is_err());
    assert!(c.check_exposure(true).is_ok());
    c.server.api_token = Secret::new("x");
    let e = c.check_exposure(false).unwrap_err().to_string();
    assert!(e.contains("server.worker_token"), "an open worker port is refused too: {e}");
    c.server.worker_token = Secret::new("y");
    let e = c.check_exposure(false).unwrap_err().to_string();
    assert!(e.contains("server.tls_cert") && e.contains("--insecure"), "tokens in clear are refused too: {e}");
    c.server.tls_cert = "cert.pem".into();
    assert!(c.validate_tls().unwrap_err().to_string().contains("server.tls_key"), "the pair comes together");
    c.server.tls_key = "key.pem".into();
    assert!(c.check_exposure(false).is_ok());
    assert_eq!(c.scheme(), "https");
}

#[test]
fn the_two_tokens_must_differ() {
    let mut c = Config::default();
    c.server.api_token = Secret::new("same");
    c.server.worker_token = Secret::new("same");
    assert!(c.validate().unwrap_err().to_string().contains("server.worker_token"));
}

#[test]
fn an_allow_list_is_parsed_and_a_wildcard_over_a_top_level_domain_refused() {
    let c = Config::from_yaml("browser:\n  allowed_domains: [example.com, \"*.Example.org\", 127.0.0.1]\n").unwrap();
    let shown: Vec<String> = c.browser.allowed_domains.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["example.com", "*.example.org", "127.0.0.1"]);
    let e = Config::from_yaml("browser:\n  allowed_domains: [\"*.com\"]\n").unwrap_err();
    let e = e.to_string();
    assert!(e.contains("browser.allowed_domains") && e.contains("top-level"), "{e}");
}

/// Issue 65 item 11: `*.co.uk` passed as a domain of two labels; the list says it is a suffix.
#[test]
fn a_wildcard_over_a_public_suffix_is_refused_and_without_the_list_every_wildcard_is() {
    let suffix = Config::from_yaml("browser:\n  allowed_domains: [\"*.co.uk\"]\n").unwrap();
    let e = suffix.validate().unwrap_err().to_string();
    assert!(e.contains("browser.allowed_domains") && e.contains("public suffix `co.uk`"), "{e}");
    let site = Config::from_yaml("browser:\n  allowed_domains: [\"*.example.co.uk\"]\n").unwrap();
    assert!(site.validate().is_ok());
    let no_list = "browser:\n  allowed_domains: [\"*.example.co.uk\"]\n  public_suffix_list: /nonexistent/psl.dat\n";
    let e = Config::from_yaml(no_list).unwrap().validate().unwrap_err().to_string();
    assert!(e.contains("cannot read /nonexistent/psl.dat"), "{e}");
}
