//! `cache_control`: prompt-cache breakpoints.

wire_string_enum! {
    /// How long a cache entry lives.
    pub enum CacheTtl {
        /// Five minutes (the default).
        FiveMinutes = "5m",
        /// One hour.
        OneHour = "1h",
    }
}

wire_struct! {
    /// A prompt-cache breakpoint: `{"type":"ephemeral","ttl":"5m"|"1h"}`.
    pub struct CacheControl {
        required {
            /// Always `ephemeral` today.
            pub kind: String => "type",
        }
        optional {
            /// The lifetime; absent means five minutes.
            pub ttl: CacheTtl,
        }
    }
}

impl CacheControl {
    /// An `ephemeral` breakpoint with the default (five minute) lifetime; add
    /// `.with_ttl(CacheTtl::OneHour)` for an hour.
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".to_owned(),
            ttl: None,
            extra: crate::Extra::new(),
        }
    }

    /// The effective lifetime (absent means five minutes).
    pub fn effective_ttl(&self) -> CacheTtl {
        self.ttl.clone().unwrap_or(CacheTtl::FiveMinutes)
    }
}
