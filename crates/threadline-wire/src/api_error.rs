//! The API's error envelope: `{"type":"error","error":{"type":…,"message":…},"request_id":…}`.

wire_string_enum! {
    /// `error.type`.
    pub enum ApiErrorType {
        /// 400: a format or content problem.
        InvalidRequest = "invalid_request_error",
        /// 401: bad or missing key.
        Authentication = "authentication_error",
        /// 402: billing.
        Billing = "billing_error",
        /// 403: the key lacks permission.
        Permission = "permission_error",
        /// 404: unknown endpoint, resource or model.
        NotFound = "not_found_error",
        /// 413: the request is over 32 MB.
        RequestTooLarge = "request_too_large",
        /// 429: rate limited.
        RateLimit = "rate_limit_error",
        /// 500: internal error.
        Api = "api_error",
        /// 504: timeout.
        Timeout = "timeout_error",
        /// 529: overloaded.
        Overloaded = "overloaded_error",
    }
}

impl ApiErrorType {
    /// The HTTP status the API answers with for this error type.
    pub fn http_status(&self) -> u16 {
        match self {
            ApiErrorType::InvalidRequest | ApiErrorType::Other(_) => 400,
            ApiErrorType::Authentication => 401,
            ApiErrorType::Billing => 402,
            ApiErrorType::Permission => 403,
            ApiErrorType::NotFound => 404,
            ApiErrorType::RequestTooLarge => 413,
            ApiErrorType::RateLimit => 429,
            ApiErrorType::Api => 500,
            ApiErrorType::Timeout => 504,
            ApiErrorType::Overloaded => 529,
        }
    }

    /// The error type the API means by an HTTP error `status`, for an error response whose
    /// body does not say (a proxy's HTML page, an empty body): the inverse of
    /// [`http_status`](Self::http_status), with any other 5xx an [`Api`](Self::Api) error and
    /// any other status an [`InvalidRequest`](Self::InvalidRequest).
    ///
    /// ```
    /// use threadline_wire::ApiErrorType;
    ///
    /// assert_eq!(ApiErrorType::for_status(529), ApiErrorType::Overloaded);
    /// assert_eq!(ApiErrorType::for_status(502), ApiErrorType::Api);
    /// assert_eq!(ApiErrorType::for_status(418), ApiErrorType::InvalidRequest);
    /// ```
    pub fn for_status(status: u16) -> ApiErrorType {
        match status {
            401 => ApiErrorType::Authentication,
            402 => ApiErrorType::Billing,
            403 => ApiErrorType::Permission,
            404 => ApiErrorType::NotFound,
            413 => ApiErrorType::RequestTooLarge,
            429 => ApiErrorType::RateLimit,
            504 => ApiErrorType::Timeout,
            529 => ApiErrorType::Overloaded,
            s if s >= 500 => ApiErrorType::Api,
            _ => ApiErrorType::InvalidRequest,
        }
    }
}

wire_struct! {
    /// `error`: the type and the human-readable message.
    pub struct ApiErrorBody {
        required {
            /// The error type.
            pub kind: ApiErrorType => "type",
            /// The message (not a stable API: match on `kind`).
            pub message: String,
        }
        optional {}
    }
}

wire_struct! {
    /// The error envelope of a non-2xx response, and of a mid-stream `error` event.
    pub struct ApiErrorResponse {
        required(no_new) {
            /// Always `error`.
            pub kind: String => "type",
            /// The error.
            pub error: ApiErrorBody,
        }
        optional {
            /// The request id (`req_…`).
            pub request_id: String,
        }
    }
}

impl ApiErrorResponse {
    /// An envelope for the given type and message.
    pub fn new(kind: ApiErrorType, message: impl Into<String>) -> Self {
        ApiErrorResponse {
            kind: "error".to_owned(),
            error: ApiErrorBody {
                kind,
                message: message.into(),
                extra: crate::Extra::new(),
            },
            request_id: None,
            extra: crate::Extra::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_status_inverts_http_status() {
        for kind in [
            ApiErrorType::InvalidRequest,
            ApiErrorType::Authentication,
            ApiErrorType::Billing,
            ApiErrorType::Permission,
            ApiErrorType::NotFound,
            ApiErrorType::RequestTooLarge,
            ApiErrorType::RateLimit,
            ApiErrorType::Api,
            ApiErrorType::Timeout,
            ApiErrorType::Overloaded,
        ] {
            assert_eq!(ApiErrorType::for_status(kind.http_status()), kind);
        }
        assert_eq!(ApiErrorType::for_status(502), ApiErrorType::Api);
        assert_eq!(ApiErrorType::for_status(503), ApiErrorType::Api);
        assert_eq!(ApiErrorType::for_status(400), ApiErrorType::InvalidRequest);
        assert_eq!(ApiErrorType::for_status(422), ApiErrorType::InvalidRequest);
    }
}
