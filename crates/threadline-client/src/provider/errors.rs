//! The platforms' error answers read as the API's error envelope (docs/api-notes.md#cloud-platforms):
//! Bedrock's AWS errors (`x-amzn-ErrorType` and `{"message": …}`) and Vertex's Google envelope
//! (`{"error": {"code", "message", "status"}}`, sometimes inside a one-element array). The
//! error type is what the platform's error means, so the retry policy and every predicate
//! (`is_rate_limit`, `is_overloaded`, …) work on every platform; the message names the
//! platform and its error.

use http::HeaderMap;
use serde_json::Value;
use threadline_wire::{ApiErrorResponse, ApiErrorType};

use super::Provider;

/// The API's error type an AWS error name means.
fn aws_error_type(name: &str, status: u16) -> ApiErrorType {
    match name {
        "ThrottlingException" | "ServiceQuotaExceededException" | "TooManyRequestsException" => {
            ApiErrorType::RateLimit
        }
        "ServiceUnavailableException" | "ModelNotReadyException" => ApiErrorType::Overloaded,
        "ValidationException" | "SerializationException" => ApiErrorType::InvalidRequest,
        "AccessDeniedException" => ApiErrorType::Permission,
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "MissingAuthenticationTokenException"
        | "ExpiredTokenException"
        | "IncompleteSignatureException" => ApiErrorType::Authentication,
        "ResourceNotFoundException" => ApiErrorType::NotFound,
        "ModelTimeoutException" => ApiErrorType::Timeout,
        "InternalServerException" | "ModelErrorException" | "ModelStreamErrorException" => {
            ApiErrorType::Api
        }
        _ => ApiErrorType::for_status(status),
    }
}

/// The API's error type a Google status means.
fn google_error_type(status_name: &str, status: u16) -> ApiErrorType {
    match status_name {
        "UNAUTHENTICATED" => ApiErrorType::Authentication,
        "PERMISSION_DENIED" => ApiErrorType::Permission,
        "NOT_FOUND" => ApiErrorType::NotFound,
        "RESOURCE_EXHAUSTED" => ApiErrorType::RateLimit,
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => ApiErrorType::InvalidRequest,
        "UNAVAILABLE" => ApiErrorType::Overloaded,
        "DEADLINE_EXCEEDED" => ApiErrorType::Timeout,
        "INTERNAL" | "UNKNOWN" => ApiErrorType::Api,
        _ => ApiErrorType::for_status(status),
    }
}

/// The error envelope a platform's error answer means, when it is in the platform's own shape
/// (an answer already in the API's shape is read as the API's).
pub(crate) fn platform_error(
    provider: &Provider,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<ApiErrorResponse> {
    match provider {
        Provider::Bedrock { .. } => {
            let named = headers
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())?;
            // `ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/`
            let name = named.split(':').next().unwrap_or(named).trim();
            let value: Value = serde_json::from_slice(body).unwrap_or_default();
            let message = value
                .get("message")
                .or_else(|| value.get("Message"))
                .and_then(Value::as_str)
                .unwrap_or("");
            Some(ApiErrorResponse::new(
                aws_error_type(name, status),
                format!("{} {name}: {message}", provider.display_name()),
            ))
        }
        Provider::Vertex { .. } => {
            let value: Value = serde_json::from_slice(body).ok()?;
            let error = match &value {
                Value::Array(items) => items.first()?.get("error")?,
                other => other.get("error")?,
            };
            // The API's own envelope has `type`; Google's has `status`.
            let status_name = error.get("status")?.as_str()?;
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            Some(ApiErrorResponse::new(
                google_error_type(status_name, status),
                format!("{} {status_name}: {message}", provider.display_name()),
            ))
        }
        Provider::Anthropic | Provider::Foundry => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrocks_errors_keep_their_meaning() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
                .parse()
                .expect("a header"),
        );
        let body = br#"{"message":"Too many requests, please wait before trying again."}"#;
        let bedrock = Provider::bedrock("us-east-1");
        let error = platform_error(&bedrock, 429, &headers, body).expect("Bedrock's shape");
        assert_eq!(error.error.kind, ApiErrorType::RateLimit);
        assert_eq!(
            error.error.message,
            "Amazon Bedrock ThrottlingException: Too many requests, please wait before trying again."
        );
        // Without the header, the body is read as the API's (newer models answer so).
        assert!(platform_error(&bedrock, 400, &HeaderMap::new(), body).is_none());
    }

    #[test]
    fn googles_envelope_object_or_array() {
        let vertex = Provider::vertex("p", "global");
        let object =
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        let error = platform_error(&vertex, 429, &HeaderMap::new(), object).expect("Google's");
        assert_eq!(error.error.kind, ApiErrorType::RateLimit);
        assert_eq!(
            error.error.message,
            "Vertex AI RESOURCE_EXHAUSTED: Quota exceeded"
        );
        let array = br#"[{"error":{"code":401,"message":"x","status":"UNAUTHENTICATED"}}]"#;
        let error = platform_error(&vertex, 401, &HeaderMap::new(), array).expect("Google's");
        assert_eq!(error.error.kind, ApiErrorType::Authentication);
        // The API's own envelope is left to the API's reader.
        let api = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(platform_error(&vertex, 529, &HeaderMap::new(), api).is_none());
    }
}
