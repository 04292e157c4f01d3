//! A Google service account for tests: a JSON key file whose `token_uri` points at a mock's
//! token endpoint (`threadline mock --google-service-account`), so that Application Default
//! Credentials (`GOOGLE_APPLICATION_CREDENTIALS`) get their access tokens from the mock.
//!
//! The RSA key in `data/google-service-account-test-key.pem` was generated for these tests
//! (`openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`); it signs nothing but
//! token requests to a mock.
//!
//! ```
//! let key = threadline_testkit::google::service_account_key("http://127.0.0.1:9/token");
//! let json: serde_json::Value = serde_json::from_str(&key).expect("JSON");
//! assert_eq!(json["type"], "service_account");
//! assert_eq!(json["token_uri"], "http://127.0.0.1:9/token");
//! ```

/// The test key (PKCS#8 PEM).
pub const TEST_KEY_PEM: &str = include_str!("../data/google-service-account-test-key.pem");

/// The test account's email.
pub const CLIENT_EMAIL: &str = "threadline-test@threadline-mock.iam.gserviceaccount.com";

/// The test account's key file, its tokens asked of `token_uri`.
pub fn service_account_key(token_uri: &str) -> String {
    serde_json::json!({
        "type": "service_account",
        "project_id": "threadline-mock",
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": TEST_KEY_PEM,
        "client_email": CLIENT_EMAIL,
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    })
    .to_string()
}
