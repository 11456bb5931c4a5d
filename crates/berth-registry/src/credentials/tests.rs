//! The file store and the helper protocol against real files and a real
//! (shell script) helper in temporary directories.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;

fn credentials(username: &str, secret: &str) -> Credentials {
    Credentials {
        username: username.to_owned(),
        secret: secret.to_owned(),
    }
}

fn write(path: &Path, text: &str) {
    fs_err::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

fn mode(path: &Path) -> u32 {
    fs_err::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A helper in the docker-credential-helpers protocol, keeping what it is
/// given in `DIR/state/` and appending each call to `DIR/state/log`.
const TEST_HELPER: &str = r#"#!/bin/sh
state="$(dirname "$0")/state"
mkdir -p "$state"
input=$(cat)
case "$1" in
store) url=$(printf '%s' "$input" | sed -n 's/.*"ServerURL":"\([^"]*\)".*/\1/p') ;;
*) url=$input ;;
esac
echo "$1 $url" >>"$state/log"
file="$state/$(printf '%s' "$url" | tr -c 'A-Za-z0-9.-' _)"
case "$1" in
store) printf '%s' "$input" >"$file" ;;
get)
    if [ -f "$file" ]; then cat "$file"; else echo "credentials not found in native keychain"; exit 1; fi ;;
erase)
    if [ -f "$file" ]; then rm "$file"; else echo "credentials not found in native keychain"; exit 1; fi ;;
*) echo "unknown action $1"; exit 1 ;;
esac
"#;

fn install_helper(directory: &Path, name: &str, script: &str) {
    let path = directory.join(format!("docker-credential-{name}"));
    write(&path, script);
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A configuration directory and an empty helper search path.
struct Setup {
    _temporary: tempfile::TempDir,
    config: DockerConfig,
    bin: std::path::PathBuf,
}

fn setup() -> Setup {
    let temporary = tempfile::tempdir().unwrap();
    let bin = temporary.path().join("bin");
    fs_err::create_dir(&bin).unwrap();
    let config = DockerConfig::new(temporary.path().join("docker")).with_search_path(&bin);
    Setup {
        _temporary: temporary,
        config,
        bin,
    }
}

fn helper_log(setup: &Setup) -> String {
    fs_err::read_to_string(setup.bin.join("state/log")).unwrap_or_default()
}

#[test]
fn no_file_means_no_credentials() {
    let setup = setup();
    assert_eq!(setup.config.credentials_for("docker.io").unwrap(), None);
    assert!(!setup.config.erase_credentials("localhost:5000").unwrap());
    assert!(
        !setup.config.dir().exists(),
        "a lookup or no-op erase writes nothing"
    );
}

#[test]
fn auths_entries_decode_as_docker_writes_them() {
    let setup = setup();
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(
        &setup.config.file(),
        r#"{
        "auths": {
            "https://index.docker.io/v1/": {"auth": "aHViOnB3OmQ="},
            "https://legacy.example:5000/v1/": {"auth": "b2xkOnNlY3JldAAA"},
            "plain.example": {"username": "plain", "password": "text"},
            "token.example": {"auth": "YWxpY2U6", "identitytoken": "refresh"},
            "placeholder.example": {},
            "broken.example": {"auth": "bm8tY29sb24="}
        }
    }"#,
    );
    let config = &setup.config;
    // Docker Hub under every one of its names; the password keeps its ':'.
    for name in ["docker.io", "index.docker.io", "registry-1.docker.io"] {
        assert_eq!(
            config.credentials_for(name).unwrap(),
            Some(credentials("hub", "pw:d"))
        );
    }
    // A legacy URL key answers for its host; trailing NULs are trimmed.
    assert_eq!(
        config.credentials_for("legacy.example:5000").unwrap(),
        Some(credentials("old", "secret"))
    );
    assert_eq!(
        config.credentials_for("plain.example").unwrap(),
        Some(credentials("plain", "text"))
    );
    assert_eq!(
        config.credentials_for("token.example").unwrap(),
        Some(credentials(IDENTITY_TOKEN_USERNAME, "refresh"))
    );
    assert_eq!(
        config.lookup("token.example").unwrap().unwrap().username,
        "alice"
    );
    assert_eq!(config.credentials_for("placeholder.example").unwrap(), None);
    assert_eq!(config.credentials_for("other.example").unwrap(), None);
    let error = config.credentials_for("broken.example").unwrap_err();
    assert!(
        matches!(error, CredentialsError::InvalidAuth { ref key, .. } if key == "broken.example"),
        "{error:?}"
    );
}

#[test]
fn unreadable_files_are_errors() {
    let setup = setup();
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(&setup.config.file(), "{not json");
    assert!(matches!(
        setup.config.credentials_for("x.example"),
        Err(CredentialsError::Parse { .. })
    ));
    write(&setup.config.file(), "[]");
    assert!(matches!(
        setup.config.credentials_for("x.example"),
        Err(CredentialsError::NotAnObject { .. })
    ));
    // An empty file is an empty configuration, as for docker/cli.
    write(&setup.config.file(), "\n");
    assert_eq!(setup.config.credentials_for("x.example").unwrap(), None);
}

#[test]
fn a_new_file_is_written_as_docker_writes_it() {
    let setup = setup();
    let store = setup
        .config
        .store_credentials("http://127.0.0.1:5000/v2/", &credentials("alice", "s3cret"))
        .unwrap();
    assert_eq!(store, CredentialStore::File(setup.config.file()));
    // Byte for byte what `docker login 127.0.0.1:5000` writes.
    assert_eq!(
        read(&setup.config.file()),
        "{\n\t\"auths\": {\n\t\t\"127.0.0.1:5000\": {\n\t\t\t\"auth\": \"YWxpY2U6czNjcmV0\"\n\t\t}\n\t}\n}"
    );
    assert_eq!(mode(&setup.config.file()), 0o600);
    assert_eq!(mode(setup.config.dir()), 0o700);
    assert_eq!(
        setup.config.credentials_for("127.0.0.1:5000").unwrap(),
        Some(credentials("alice", "s3cret"))
    );
    // Docker Hub's names all file under the index URL.
    setup
        .config
        .store_credentials("docker.io", &credentials("hub", "pw"))
        .unwrap();
    let document: serde_json::Value = serde_json::from_str(&read(&setup.config.file())).unwrap();
    assert_eq!(document["auths"][INDEX_SERVER]["auth"], "aHViOnB3");
}

#[test]
fn storing_keeps_everything_else() {
    let setup = setup();
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    let original = r#"{"psFormat": "table {{.ID}}", "auths": {"z.example": {"auth": "ejp6", "email": "z@example"}}, "proxies": {"default": {"httpProxy": "http://proxy:3128"}}, "someFutureKey": [1, 2]}"#;
    write(&setup.config.file(), original);
    fs_err::set_permissions(setup.config.file(), std::fs::Permissions::from_mode(0o644)).unwrap();
    setup
        .config
        .store_credentials("a.example", &credentials("a", "b"))
        .unwrap();
    let text = read(&setup.config.file());
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<_> = document.as_object().unwrap().keys().cloned().collect();
    // docker/cli's order for its own keys; the rest after, as they were.
    assert_eq!(keys, ["auths", "psFormat", "proxies", "someFutureKey"]);
    assert_eq!(
        document["proxies"]["default"]["httpProxy"],
        "http://proxy:3128"
    );
    assert_eq!(document["someFutureKey"], serde_json::json!([1, 2]));
    assert_eq!(document["auths"]["z.example"]["email"], "z@example");
    // auths in Go's sorted map order.
    let auths: Vec<_> = document["auths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(auths, ["a.example", "z.example"]);
    assert_eq!(
        mode(&setup.config.file()),
        0o644,
        "an existing file keeps its mode"
    );
    // No temporary file is left beside it.
    let names: Vec<_> = fs_err::read_dir(setup.config.dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["config.json"]);
}

#[test]
fn identity_tokens_replace_the_password() {
    let setup = setup();
    setup
        .config
        .store_identity_token("registry.example", "alice", "refresh-token")
        .unwrap();
    let document: serde_json::Value = serde_json::from_str(&read(&setup.config.file())).unwrap();
    assert_eq!(
        document["auths"]["registry.example"],
        serde_json::json!({"auth": "YWxpY2U6", "identitytoken": "refresh-token"})
    );
    assert_eq!(
        setup.config.credentials_for("registry.example").unwrap(),
        Some(credentials(IDENTITY_TOKEN_USERNAME, "refresh-token"))
    );
}

#[test]
fn a_symlinked_file_is_written_through_the_link() {
    let setup = setup();
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    let real = setup.config.dir().join("real.json");
    write(&real, "{}");
    fs_err::os::unix::fs::symlink("real.json", setup.config.file()).unwrap();
    setup
        .config
        .store_credentials("a.example", &credentials("a", "b"))
        .unwrap();
    assert!(fs_err::symlink_metadata(setup.config.file())
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(read(&real).contains("a.example"));
}

#[test]
fn logout_removes_every_legacy_form_and_nothing_else() {
    let setup = setup();
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(
        &setup.config.file(),
        r#"{"auths": {"r.example:5000": {"auth": "YTpi"}, "http://r.example:5000": {"auth": "YTpi"}, "https://r.example:5000/v1/": {"auth": "YTpi"}, "other.example": {"auth": "YTpi"}}}"#,
    );
    assert!(setup.config.erase_credentials("r.example:5000").unwrap());
    let document: serde_json::Value = serde_json::from_str(&read(&setup.config.file())).unwrap();
    let left: Vec<_> = document["auths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    // A key with a path was never one of the forms docker/cli tries either.
    assert_eq!(left, ["https://r.example:5000/v1/", "other.example"]);
    let before = read(&setup.config.file());
    assert!(!setup.config.erase_credentials("r.example:5000").unwrap());
    assert_eq!(
        read(&setup.config.file()),
        before,
        "nothing to erase, nothing written"
    );
}

#[test]
fn credential_helpers_get_store_and_erase() {
    let setup = setup();
    install_helper(&setup.bin, "test", TEST_HELPER);
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(
        &setup.config.file(),
        r#"{"auths": {}, "credHelpers": {"helped.example": "test"}}"#,
    );
    let config = &setup.config;
    assert_eq!(config.credentials_for("helped.example").unwrap(), None);
    assert_eq!(
        config.store_for("helped.example").unwrap(),
        CredentialStore::Helper("test".into())
    );
    assert_eq!(
        config.store_for("plain.example").unwrap(),
        CredentialStore::File(config.file())
    );
    let store = config
        .store_credentials("helped.example", &credentials("alice", "s3cret"))
        .unwrap();
    assert_eq!(store, CredentialStore::Helper("test".into()));
    let stored = read(&setup.bin.join("state/helped.example"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stored).unwrap(),
        serde_json::json!({"ServerURL": "helped.example", "Username": "alice", "Secret": "s3cret"})
    );
    // The file keeps only docker/cli's empty placeholder.
    let document: serde_json::Value = serde_json::from_str(&read(&config.file())).unwrap();
    assert_eq!(document["auths"]["helped.example"], serde_json::json!({}));
    assert_eq!(
        config.credentials_for("helped.example").unwrap(),
        Some(credentials("alice", "s3cret"))
    );
    assert!(config.erase_credentials("helped.example").unwrap());
    assert!(!setup.bin.join("state/helped.example").exists());
    let document: serde_json::Value = serde_json::from_str(&read(&config.file())).unwrap();
    assert_eq!(document["auths"], serde_json::json!({}));
    assert_eq!(
        helper_log(&setup),
        "get helped.example\nstore helped.example\nget helped.example\nerase helped.example\nerase helped.example\n"
    );
}

#[test]
fn a_creds_store_holds_every_server_and_identity_tokens() {
    let setup = setup();
    install_helper(&setup.bin, "test", TEST_HELPER);
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(&setup.config.file(), r#"{"credsStore": "test"}"#);
    setup
        .config
        .store_identity_token("docker.io", "alice", "refresh")
        .unwrap();
    let stored = read(&setup.bin.join("state/https___index.docker.io_v1_"));
    assert!(
        stored.contains(r#""Username":"<token>","Secret":"refresh""#),
        "{stored}"
    );
    assert_eq!(
        setup.config.credentials_for("index.docker.io").unwrap(),
        Some(credentials(IDENTITY_TOKEN_USERNAME, "refresh"))
    );
}

#[test]
fn helper_failures_use_dockers_words() {
    let setup = setup();
    install_helper(&setup.bin, "broken", "#!/bin/sh\necho boom\nexit 3\n");
    fs_err::create_dir_all(setup.config.dir()).unwrap();
    write(
        &setup.config.file(),
        r#"{"credHelpers": {"broken.example": "broken", "missing.example": "missing"}}"#,
    );
    let error = setup.config.credentials_for("broken.example").unwrap_err();
    assert_eq!(
        error.to_string(),
        "error getting credentials - err: exit status 3, out: `boom`"
    );
    let error = setup
        .config
        .store_credentials("missing.example", &credentials("a", "b"))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "error storing credentials - err: exec: \"docker-credential-missing\": executable file not found in $PATH, out: ``"
    );
    // Logout fails only when every form failed: here the URL forms go to
    // the file store, which has nothing to erase and so succeeds.
    assert!(!setup.config.erase_credentials("broken.example").unwrap());
    write(&setup.config.file(), r#"{"credsStore": "broken"}"#);
    let Err(CredentialsError::Erase { failures }) =
        setup.config.erase_credentials("broken.example")
    else {
        panic!("expected an erase error");
    };
    let keys: Vec<_> = failures.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "broken.example",
            "broken.example",
            "http://broken.example",
            "https://broken.example"
        ]
    );
    assert_eq!(
        failures[0].1.to_string(),
        "error erasing credentials - err: exit status 3, out: `boom`"
    );
}

#[test]
fn the_platform_default_helper_is_used_only_for_an_empty_config() {
    let setup = setup();
    install_helper(&setup.bin, "secretservice", TEST_HELPER);
    let store = setup
        .config
        .store_credentials("a.example", &credentials("a", "b"))
        .unwrap();
    assert_eq!(store, CredentialStore::Helper("secretservice".into()));
    let document: serde_json::Value = serde_json::from_str(&read(&setup.config.file())).unwrap();
    assert_eq!(
        document,
        serde_json::json!({"auths": {"a.example": {}}, "credsStore": "secretservice"})
    );
    // With `pass` on the path, docker-credential-pass is the default.
    let other = self::setup();
    install_helper(&other.bin, "pass", TEST_HELPER);
    install_helper(&other.bin, "secretservice", TEST_HELPER);
    write(&other.bin.join("pass"), "#!/bin/sh\n");
    fs_err::set_permissions(
        other.bin.join("pass"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(
        other.config.store_for("a.example").unwrap(),
        CredentialStore::Helper("pass".into())
    );
}

#[test]
fn detach_keys_are_read_from_the_file() {
    let directory = tempfile::tempdir().unwrap();
    let config = DockerConfig::new(directory.path());
    assert_eq!(config.detach_keys().unwrap(), None);
    write(&config.file(), r#"{"detachKeys": "ctrl-a,x"}"#);
    assert_eq!(config.detach_keys().unwrap().as_deref(), Some("ctrl-a,x"));
    // Empty (or not a string) is unset, and the caller's default applies.
    write(&config.file(), r#"{"detachKeys": ""}"#);
    assert_eq!(config.detach_keys().unwrap(), None);
    write(&config.file(), r#"{"detachKeys": 7}"#);
    assert_eq!(config.detach_keys().unwrap(), None);
    write(&config.file(), "{");
    assert!(config.detach_keys().is_err());
}
