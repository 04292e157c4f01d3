//! Google's OAuth token endpoint, for a service account's key: `POST /token` with a JWT bearer
//! grant (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`), the JWT
//! signed RS256 by the account's private key, answered with an access token that the Vertex
//! front then takes (docs/platforms.md §2.3). The mock checks what Google checks: the
//! signature (with the account's public key), the issuer, an audience that is the token
//! endpoint, the `cloud-platform` scope and the time window.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, KeyPair as _};
use serde_json::Value;

/// The grant type of a service account's assertion.
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

use threadline_wire::platform::VERTEX_OAUTH_SCOPE as CLOUD_PLATFORM_SCOPE;

/// The lifetime of an access token the mock issues, in seconds (Google's: one hour).
const TOKEN_LIFETIME: u64 = 3599;

/// A Google service account the mock issues tokens to: its email and its public key, read
/// from the account's JSON key file (the private key's public half; the private key itself
/// is not kept).
#[derive(Clone, PartialEq, Eq)]
pub struct GoogleServiceAccount {
    client_email: String,
    public_key: Vec<u8>,
}

impl std::fmt::Debug for GoogleServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleServiceAccount")
            .field("client_email", &self.client_email)
            .finish_non_exhaustive()
    }
}

impl GoogleServiceAccount {
    /// The account of a JSON key file (`type: service_account`, `client_email`,
    /// `private_key` as a PKCS#8 PEM). The error names what is wrong, never the key.
    pub fn from_json(json: &str) -> Result<GoogleServiceAccount, String> {
        let key: Value =
            serde_json::from_str(json).map_err(|_| "not a JSON key file".to_owned())?;
        if key["type"] != "service_account" {
            return Err("not a service account key (`type` is not `service_account`)".into());
        }
        let email = key["client_email"]
            .as_str()
            .filter(|e| !e.is_empty())
            .ok_or("no `client_email`")?;
        let pem = key["private_key"].as_str().ok_or("no `private_key`")?;
        let body: String = pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<Vec<_>>()
            .concat();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body.trim())
            .map_err(|_| "`private_key` is not PEM".to_owned())?;
        let pair = signature::RsaKeyPair::from_pkcs8(&der)
            .map_err(|_| "`private_key` is not a PKCS#8 RSA key".to_owned())?;
        Ok(GoogleServiceAccount {
            client_email: email.to_owned(),
            public_key: pair.public_key().as_ref().to_vec(),
        })
    }

    /// The account's email.
    pub fn client_email(&self) -> &str {
        &self.client_email
    }

    /// Checks the form body of a token request; `Ok(())` when it grants a token.
    pub(crate) fn check_grant(&self, form: &[u8]) -> Result<(), &'static str> {
        let mut grant = None;
        let mut assertion = None;
        for pair in form.split(|&b| b == b'&') {
            let mut parts = pair.splitn(2, |&b| b == b'=');
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let value = form_decode(value);
            match name {
                b"grant_type" => grant = Some(value),
                b"assertion" => assertion = Some(value),
                _ => {}
            }
        }
        if grant.as_deref() != Some(JWT_BEARER_GRANT) {
            return Err("Invalid grant_type");
        }
        let assertion = assertion.ok_or("Invalid JWT: missing assertion")?;
        let mut parts = assertion.split('.');
        let (Some(header), Some(claims), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(
                "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe",
            );
        };
        // Base64url, padded or not (the `gcp_auth` crate pads; Google takes both).
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).ok();
        let header: Value = decode(header)
            .and_then(|h| serde_json::from_slice(&h).ok())
            .ok_or("Invalid JWT header")?;
        if header["alg"] != "RS256" {
            return Err("Invalid JWT: unsupported algorithm");
        }
        let signed_len = assertion.len() - sig.len() - 1;
        let signature = decode(sig).ok_or("Invalid JWT Signature.")?;
        signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, &self.public_key)
            .verify(&assertion.as_bytes()[..signed_len], &signature)
            .map_err(|_| "Invalid JWT Signature.")?;
        let claims: Value = decode(claims)
            .and_then(|c| serde_json::from_slice(&c).ok())
            .ok_or("Invalid JWT claims")?;
        if claims["iss"] != self.client_email.as_str() {
            return Err("Invalid JWT: iss is not the service account");
        }
        if !claims["aud"]
            .as_str()
            .is_some_and(|a| a.ends_with("/token"))
        {
            return Err("Invalid JWT: Failed audience check.");
        }
        let scopes = claims["scope"].as_str().unwrap_or("");
        if !scopes.split(' ').any(|s| s == CLOUD_PLATFORM_SCOPE) {
            return Err("Invalid JWT: no cloud-platform scope");
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (iat, exp) = (claims["iat"].as_u64(), claims["exp"].as_u64());
        match (iat, exp) {
            (Some(iat), Some(exp))
                if iat <= now + 60 && exp > now && exp.saturating_sub(iat) <= 3600 => {}
            _ => {
                return Err(
                    "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe",
                );
            }
        }
        Ok(())
    }
}

/// A form value decoded: `+` as a space, `%XX` as its byte.
fn form_decode(value: &[u8]) -> String {
    let spaced: Vec<u8> = value
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    percent_encoding::percent_decode(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

/// The token endpoint's answer granting `token`.
pub(crate) fn granted(token: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "access_token": token,
        "expires_in": TOKEN_LIFETIME,
        "token_type": "Bearer",
    }))
    .expect("a JSON object serializes")
}

/// The token endpoint's refusal, in Google's OAuth shape.
pub(crate) fn refused(description: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "error": "invalid_grant",
        "error_description": description,
    }))
    .expect("a JSON object serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_testkit::google::{CLIENT_EMAIL, TEST_KEY_PEM, service_account_key};

    fn account() -> GoogleServiceAccount {
        GoogleServiceAccount::from_json(&service_account_key("http://127.0.0.1:9/token"))
            .expect("the test account")
    }

    /// A grant signed by the test key with `claims`.
    fn grant(claims: &Value) -> Vec<u8> {
        let body: String = TEST_KEY_PEM
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("PEM");
        let pair = signature::RsaKeyPair::from_pkcs8(&der).expect("the key");
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let mut sig = vec![0; pair.public().modulus_len()];
        pair.sign(
            &signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signed.as_bytes(),
            &mut sig,
        )
        .expect("signs");
        let jwt = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig));
        format!("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={jwt}")
            .into_bytes()
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
    }

    fn claims() -> Value {
        serde_json::json!({"iss": CLIENT_EMAIL, "scope": CLOUD_PLATFORM_SCOPE,
            "aud": "http://127.0.0.1:9/token", "iat": now(), "exp": now() + 3600})
    }

    #[test]
    fn a_grant_is_checked_as_google_checks_it() {
        let account = account();
        assert_eq!(account.client_email(), CLIENT_EMAIL);
        assert_eq!(account.check_grant(&grant(&claims())), Ok(()));
        let with = |key: &str, value: Value| {
            let mut c = claims();
            c[key] = value;
            account.check_grant(&grant(&c))
        };
        assert!(with("iss", "other@x.iam.gserviceaccount.com".into()).is_err());
        assert_eq!(
            with("aud", "https://example.com/".into()),
            Err("Invalid JWT: Failed audience check.")
        );
        assert!(
            with(
                "scope",
                "https://www.googleapis.com/auth/userinfo.email".into()
            )
            .is_err()
        );
        assert!(with("exp", (now() - 10).into()).is_err());
        assert!(with("exp", (now() + 7200).into()).is_err());
        // Claims changed after signing: the signature no longer holds.
        let valid = String::from_utf8(grant(&claims())).expect("ASCII");
        let (head, rest) = valid.split_once("&assertion=").expect("an assertion");
        let parts: Vec<&str> = rest.split('.').collect();
        let mut forged = claims();
        forged["scope"] = format!("{CLOUD_PLATFORM_SCOPE} more").into();
        let forged = URL_SAFE_NO_PAD.encode(forged.to_string());
        let tampered = format!("{head}&assertion={}.{forged}.{}", parts[0], parts[2]);
        assert_eq!(
            account.check_grant(tampered.as_bytes()),
            Err("Invalid JWT Signature.")
        );
        for hostile in [
            &b""[..],
            b"grant_type=password",
            b"&&==",
            b"assertion=a.b.c",
        ] {
            assert!(account.check_grant(hostile).is_err());
        }
        let wrong_grant = valid.replacen("jwt-bearer", "saml2-bearer", 1);
        assert_eq!(
            account.check_grant(wrong_grant.as_bytes()),
            Err("Invalid grant_type")
        );
    }

    #[test]
    fn only_a_service_account_key_is_read_and_never_quoted() {
        let key = service_account_key("http://127.0.0.1:9/token");
        for (broken, why) in [
            ("not json".to_owned(), "not a JSON key file"),
            (
                key.replace("service_account", "authorized_user"),
                "not a service account",
            ),
            (
                key.replace("BEGIN PRIVATE KEY-----\\n", "BEGIN PRIVATE KEY-----\\n!!"),
                "not PEM",
            ),
        ] {
            let error = GoogleServiceAccount::from_json(&broken).expect_err(why);
            assert!(error.contains(why), "{error}");
            assert!(!error.contains("MII"), "{error}");
        }
        assert!(!format!("{:?}", account()).contains("public_key"));
    }
}
