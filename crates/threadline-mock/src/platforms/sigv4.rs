//! AWS Signature Version 4, checked as AWS checks it: the request signed again, with the
//! secret the mock holds, over the headers the client says it signed, at the time it says it
//! signed, and the two signatures compared. The signing is `aws-sigv4`'s, so a client signing
//! with another implementation (botocore, the JavaScript SDK) is checked against AWS's own
//! Rust code, not against ours.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use http::request::Parts;

/// How far a request's signing time may be from the mock's clock (AWS's window).
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// Why a signature was refused, each with AWS's error name and words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SigV4Refusal {
    /// No `Authorization` header of the SigV4 form, or no `x-amz-date`.
    Missing,
    /// An access key id the mock does not know.
    UnknownKey,
    /// Scoped to another service.
    WrongService(String),
    /// Signed too long ago (or in the future).
    Expired,
    /// The signature is not the one the secret gives.
    Mismatch,
}

impl SigV4Refusal {
    /// AWS's error name (the `x-amzn-ErrorType` before its `:`).
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            SigV4Refusal::Missing => "MissingAuthenticationTokenException",
            SigV4Refusal::UnknownKey => "UnrecognizedClientException",
            SigV4Refusal::WrongService(_) | SigV4Refusal::Expired | SigV4Refusal::Mismatch => {
                "InvalidSignatureException"
            }
        }
    }

    /// AWS's message.
    pub(crate) fn message(&self) -> String {
        match self {
            SigV4Refusal::Missing => "Missing Authentication Token".to_owned(),
            SigV4Refusal::UnknownKey => {
                "The security token included in the request is invalid.".to_owned()
            }
            SigV4Refusal::WrongService(expected) => {
                format!("Credential should be scoped to correct service: '{expected}'. ")
            }
            SigV4Refusal::Expired => "Signature expired: the request's x-amz-date is more \
                                      than 15 minutes from the server's time."
                .to_owned(),
            SigV4Refusal::Mismatch => "The request signature we calculated does not match the \
                                       signature you provided. Check your AWS Secret Access Key \
                                       and signing method. Consult the service documentation \
                                       for details."
                .to_owned(),
        }
    }
}

/// The parts of a SigV4 `Authorization` header.
#[derive(Debug, PartialEq, Eq)]
struct Authorization<'a> {
    access_key_id: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse_authorization(value: &str) -> Option<Authorization<'_>> {
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for field in rest.split(',').map(str::trim) {
        if let Some(v) = field.strip_prefix("Credential=") {
            credential = Some(v);
        } else if let Some(v) = field.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = field.strip_prefix("Signature=") {
            signature = Some(v);
        }
    }
    // Credential=AKID/20261203/us-east-1/bedrock/aws4_request
    let mut scope = credential?.split('/');
    let access_key_id = scope.next()?;
    let _date = scope.next()?;
    let region = scope.next()?;
    let service = scope.next()?;
    if scope.next()? != "aws4_request" || scope.next().is_some() {
        return None;
    }
    Some(Authorization {
        access_key_id,
        region,
        service,
        signed_headers: signed?.split(';').filter(|h| !h.is_empty()).collect(),
        signature: signature?,
    })
}

/// `20261203T105000Z` as a time.
fn parse_amz_date(value: &str) -> Option<SystemTime> {
    let bytes = value.as_bytes();
    if bytes.len() != 16 || bytes[8] != b'T' || bytes[15] != b'Z' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let text = value.get(range)?;
        text.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| text.parse().ok())
            .flatten()
    };
    let (year, month, day) = (number(0..4)?, number(4..6)?, number(6..8)?);
    let (hour, minute, second) = (number(9..11)?, number(11..13)?, number(13..15)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

/// Checks the request's SigV4 signature for `service` against the key pair.
pub(crate) fn verify(
    access_key_id: &str,
    secret_access_key: &str,
    service: &str,
    parts: &Parts,
    body: &[u8],
    now: SystemTime,
) -> Result<(), SigV4Refusal> {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let authorization = header("authorization")
        .and_then(parse_authorization)
        .ok_or(SigV4Refusal::Missing)?;
    let signed_at = header("x-amz-date")
        .and_then(parse_amz_date)
        .ok_or(SigV4Refusal::Missing)?;
    if authorization.access_key_id != access_key_id {
        return Err(SigV4Refusal::UnknownKey);
    }
    if authorization.service != service {
        return Err(SigV4Refusal::WrongService(service.to_owned()));
    }
    let skew = now
        .duration_since(signed_at)
        .or_else(|e| Ok::<_, ()>(e.duration()))
        .unwrap_or(Duration::MAX);
    if skew > MAX_SKEW {
        return Err(SigV4Refusal::Expired);
    }
    // The host the client signed: HTTP/1.1's header, else HTTP/2's authority.
    let host = header("host")
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(ToString::to_string))
        .ok_or(SigV4Refusal::Mismatch)?;
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = format!("http://{host}{path_and_query}");
    // The headers signed, but those the signer adds itself (host, the date, the session
    // token): each with every value it was sent with.
    let session_token = authorization
        .signed_headers
        .contains(&"x-amz-security-token")
        .then(|| header("x-amz-security-token"))
        .flatten();
    let mut signed: Vec<(&str, &str)> = Vec::new();
    for name in &authorization.signed_headers {
        if matches!(*name, "host" | "x-amz-date" | "x-amz-security-token") {
            continue;
        }
        let mut values = parts.headers.get_all(*name).iter().peekable();
        if values.peek().is_none() {
            return Err(SigV4Refusal::Mismatch);
        }
        for value in values {
            signed.push((name, value.to_str().map_err(|_| SigV4Refusal::Mismatch)?));
        }
    }
    let credentials = Credentials::new(
        access_key_id,
        secret_access_key,
        session_token.map(str::to_owned),
        None,
        "threadline-mock",
    );
    let identity = credentials.into();
    let mut settings = SigningSettings::default();
    // Exactly the headers the client listed are signed: none is left out by name.
    settings.excluded_headers = None;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(authorization.region)
        .name(service)
        .time(signed_at)
        .settings(settings)
        .build()
        .map_err(|_| SigV4Refusal::Mismatch)?
        .into();
    let signable = SignableRequest::new(
        parts.method.as_str(),
        uri.as_str(),
        signed.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|_| SigV4Refusal::Mismatch)?;
    let output = sign(signable, &params).map_err(|_| SigV4Refusal::Mismatch)?;
    let expected = output.signature().as_bytes();
    let given = authorization.signature.as_bytes();
    // Compared in constant time: a test double, but no reason to leak where it differs.
    let differs = expected.len() != given.len()
        || expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            != 0;
    if differs {
        return Err(SigV4Refusal::Mismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed_request(secret: &str, at: SystemTime, body: &[u8]) -> Parts {
        let credentials = Credentials::new("AKIDTEST", secret, None, None, "test");
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region("us-east-1")
            .name("bedrock")
            .time(at)
            .settings(SigningSettings::default())
            .build()
            .expect("params")
            .into();
        let uri = "http://127.0.0.1:9/model/anthropic.claude-x-v1:0/invoke";
        let headers = [("content-type", "application/json")];
        let signable =
            SignableRequest::new("POST", uri, headers.into_iter(), SignableBody::Bytes(body))
                .expect("signable");
        let (instructions, _) = sign(signable, &params).expect("signs").into_parts();
        let mut request = http::Request::builder()
            .method("POST")
            .uri("/model/anthropic.claude-x-v1:0/invoke")
            .header("host", "127.0.0.1:9")
            .header("content-type", "application/json")
            .body(())
            .expect("request");
        instructions.apply_to_request_http1x(&mut request);
        request.into_parts().0
    }

    #[test]
    fn a_signature_made_with_the_secret_passes_and_any_other_fails() {
        let now = SystemTime::now();
        let parts = signed_request("s3cret", now, b"{}");
        assert_eq!(
            verify("AKIDTEST", "s3cret", "bedrock", &parts, b"{}", now),
            Ok(())
        );
        let wrong_secret = verify("AKIDTEST", "other", "bedrock", &parts, b"{}", now);
        assert_eq!(wrong_secret, Err(SigV4Refusal::Mismatch));
        let edited_body = verify("AKIDTEST", "s3cret", "bedrock", &parts, b"{ }", now);
        assert_eq!(edited_body, Err(SigV4Refusal::Mismatch));
        let other_key = verify("AKIDOTHER", "s3cret", "bedrock", &parts, b"{}", now);
        assert_eq!(other_key, Err(SigV4Refusal::UnknownKey));
        let other_service = verify("AKIDTEST", "s3cret", "bedrock-mantle", &parts, b"{}", now);
        assert!(matches!(other_service, Err(SigV4Refusal::WrongService(_))));
    }

    #[test]
    fn an_old_signature_is_expired() {
        let then = SystemTime::now() - Duration::from_secs(16 * 60);
        let parts = signed_request("s3cret", then, b"{}");
        let now = SystemTime::now();
        let old = verify("AKIDTEST", "s3cret", "bedrock", &parts, b"{}", now);
        assert_eq!(old, Err(SigV4Refusal::Expired));
    }

    #[test]
    fn a_request_without_a_signature_is_missing_one() {
        let parts = http::Request::builder()
            .uri("/model/x/invoke")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        let missing = verify("A", "s", "bedrock", &parts, b"", SystemTime::now());
        assert_eq!(missing, Err(SigV4Refusal::Missing));
    }

    #[test]
    fn amz_dates_parse_to_the_instant_they_name() {
        let t = parse_amz_date("20261203T105000Z").expect("parses");
        let secs = t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
        // 2026-12-03T10:50:00Z
        assert_eq!(secs, 1_796_295_000);
        assert_eq!(parse_amz_date("19700101T000000Z"), Some(UNIX_EPOCH));
        for bad in [
            "",
            "20261203105000Z",
            "20261303T105000Z",
            "2026120xT105000Z",
        ] {
            assert_eq!(parse_amz_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn authorization_headers_parse_into_their_parts() {
        let value = "AWS4-HMAC-SHA256 Credential=AKID/20261203/eu-west-1/bedrock/aws4_request, \
                     SignedHeaders=content-type;host;x-amz-date, Signature=abc123";
        let parsed = parse_authorization(value).expect("parses");
        assert_eq!(parsed.access_key_id, "AKID");
        assert_eq!(parsed.region, "eu-west-1");
        assert_eq!(parsed.service, "bedrock");
        assert_eq!(
            parsed.signed_headers,
            ["content-type", "host", "x-amz-date"]
        );
        assert_eq!(parsed.signature, "abc123");
        assert_eq!(parse_authorization("Bearer x"), None);
        let no_terminator = "AWS4-HMAC-SHA256 Credential=A/d/r/s, SignedHeaders=h, Signature=x";
        assert_eq!(parse_authorization(no_terminator), None);
    }
}
