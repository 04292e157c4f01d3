//! Typed tools: the input is a Rust type (`Deserialize + JsonSchema`), its JSON schema
//! derived by `schemars`, and the call an async function of that type. A typed tool is a
//! normal [`Tool`] for the loop.
//!
//! - [`typed_tool`] turns an async closure `|args: Args, ctx| async move { … }` into a tool;
//! - [`TypedTool`] is the one-method trait for a tool with state of its own, wrapped by
//!   [`Typed::new`];
//! - [`parse_args`] is the one place where an input becomes the typed arguments: an input
//!   that does not deserialize becomes an error result the model reads (naming the field
//!   serde names), never a panic or a failed run.
//!
//! The schema ([`schema_for`]) is schemars' draft-07 schema with every subschema inlined
//! (a recursive type keeps its `definitions`), without the `$schema` and `title` keys and
//! without schemars' Rust-only integer formats (`uint64`, `int32`, …), which the API does
//! not need. `Args` must be a struct (or a map): the API takes only object schemas. A tool
//! that must keep a hand-written schema (the bytes a cached prefix holds) gives it with
//! [`Typed::with_schema`]; the input is still parsed into `Args`.
//!
//! The call's output is anything [`IntoToolOutput`]: a [`ToolOutput`], a `String` or `&str`
//! (a text result), or a `Result` of one whose error (anything `Display`) becomes an error
//! result.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::permission::Permission;
use crate::tool::{Tool, ToolContext, ToolOutput, ToolStream, result};

/// What a typed tool's call may answer: a [`ToolOutput`], a text (`String`, `&str`), or a
/// `Result` of one whose error becomes an error result (its `Display`).
pub trait IntoToolOutput {
    /// The tool output.
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for &str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl<T: IntoToolOutput, E: fmt::Display> IntoToolOutput for Result<T, E> {
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(output) => output.into_tool_output(),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

/// A tool whose input is [`Args`](TypedTool::Args): one method, the call. Its name,
/// description and flags are given when it is wrapped ([`Typed::new`]).
pub trait TypedTool: Send + Sync + 'static {
    /// The input: deserialized from the model's JSON, its schema derived by `schemars`.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Runs the tool on well-formed arguments.
    fn call(&self, args: Self::Args, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// The arguments of `input`, or the error result the model reads when it does not fit
/// `A` (`invalid input: missing field `city``).
pub fn parse_args<A: DeserializeOwned>(input: Value) -> Result<A, ToolOutput> {
    serde_json::from_value(input)
        .map_err(|error| ToolOutput::error(format!("invalid input: {error}")))
}

/// The input schema of `A` for a tool definition: schemars' draft-07 schema with every
/// subschema inlined (a recursive type keeps its `definitions`), without the `$schema` and
/// `title` keys and without schemars' Rust-only number formats (`uint64`, `int32`,
/// `double`, …), which the API does not need. `A` must be a struct (or a map): the API takes
/// only object schemas.
pub fn schema_for<A: JsonSchema>() -> Value {
    let settings = schemars::r#gen::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let root = settings.into_generator().into_root_schema_for::<A>();
    let mut schema = serde_json::to_value(root).unwrap_or_else(|_| empty_object_schema());
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("$schema");
        if object
            .get("definitions")
            .and_then(Value::as_object)
            .is_some_and(serde_json::Map::is_empty)
        {
            object.remove("definitions");
        }
    }
    drop_rust_formats(&mut schema);
    schema
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// The integer and float formats schemars writes for Rust's number types: not JSON Schema
/// formats any checker knows, and noise for the model.
const RUST_FORMATS: [&str; 12] = [
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "float", "double",
];

fn drop_rust_formats(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| RUST_FORMATS.contains(&f))
            {
                object.remove("format");
            }
            for value in object.values_mut() {
                drop_rust_formats(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_rust_formats),
        _ => {}
    }
}

/// A [`TypedTool`] as a loop [`Tool`]: its name, description, schema and flags.
pub struct Typed<T> {
    name: String,
    description: String,
    schema: Value,
    concurrency_safe: bool,
    idempotent: bool,
    always_load: bool,
    tool: T,
}

impl<T> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Typed")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("concurrency_safe", &self.concurrency_safe)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

impl<T: TypedTool> Typed<T> {
    /// `tool` named `name`, described by `description`, its schema derived from
    /// [`T::Args`](TypedTool::Args). Not concurrency-safe, not idempotent, deferrable (the
    /// [`Tool`] defaults) until said otherwise.
    pub fn new(name: impl Into<String>, description: impl Into<String>, tool: T) -> Typed<T> {
        Typed {
            name: name.into(),
            description: description.into(),
            schema: schema_for::<T::Args>(),
            concurrency_safe: false,
            idempotent: false,
            always_load: false,
            tool,
        }
    }

    /// With a hand-written schema instead of the derived one (it must accept what `Args`
    /// parses, or the loop rejects the input before the call).
    pub fn with_schema(mut self, schema: Value) -> Typed<T> {
        self.schema = schema;
        self
    }

    /// Calls may run alongside other concurrency-safe calls (a read, a search).
    pub fn concurrency_safe(mut self) -> Typed<T> {
        self.concurrency_safe = true;
        self
    }

    /// Running a call twice has the effect of running it once (see
    /// [`Tool::is_idempotent`]).
    pub fn idempotent(mut self) -> Typed<T> {
        self.idempotent = true;
        self
    }

    /// Never deferred behind tool search.
    pub fn always_load(mut self) -> Typed<T> {
        self.always_load = true;
        self
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.schema.clone()
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.concurrency_safe
    }
    fn check_permission(&self, _input: &Value) -> Permission {
        Permission::Allow
    }
    fn always_load(&self) -> bool {
        self.always_load
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        self.idempotent
    }
    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        call_typed(&self.tool, input, ctx)
    }
}

/// Calls `tool` on `input`: the parsed arguments to [`TypedTool::call`], or the error result
/// of [`parse_args`]. What [`Typed`]'s [`Tool::call`] does, for a tool that implements
/// [`Tool`] itself (to keep a public type) and [`TypedTool`] for its call.
pub fn call_typed<T: TypedTool + ?Sized>(tool: &T, input: Value, ctx: ToolContext) -> ToolStream {
    match parse_args::<T::Args>(input) {
        Ok(args) => result(tool.call(args, ctx)),
        Err(output) => result(async move { output }),
    }
}

/// An async function of `A` as a [`TypedTool`] (see [`typed_tool`]).
pub struct FnTool<A, F> {
    f: Arc<F>,
    args: PhantomData<fn(A)>,
}

impl<A, F> fmt::Debug for FnTool<A, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").finish_non_exhaustive()
    }
}

impl<A, F, Fut> TypedTool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    type Args = A;

    fn call(&self, args: A, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let future = (self.f)(args, ctx);
        Box::pin(async move { future.await.into_tool_output() })
    }
}

/// A tool from an async closure of its typed input: `name` and `description` for the
/// model, the schema derived from `A` ([`tool_schema_for`](crate::tool_schema_for)), the
/// input parsed into `A` before the closure runs (an input that does not parse is an error
/// result the model reads). The closure answers anything [`IntoToolOutput`]: a text, a
/// [`ToolOutput`], or a `Result` of one whose error becomes an error result. Adjust the tool
/// with [`Typed`]'s setters (`.concurrency_safe()`, `.idempotent()`, `.with_schema(…)`).
///
/// `A` derives `schemars::JsonSchema` (schemars 0.8, re-exported as
/// `threadline_query::schemars`); its doc comments become the schema's descriptions.
///
/// ```
/// use serde::Deserialize;
/// use schemars::JsonSchema;
/// use threadline_query::{Tool, ToolContext, ToolEvent, ToolOutput, typed_tool};
/// use futures::StreamExt as _;
///
/// /// The weather of a city.
/// #[derive(Deserialize, JsonSchema)]
/// struct Weather {
///     /// The city's name.
///     city: String,
///     /// Celsius unless false.
///     metric: Option<bool>,
/// }
///
/// let tool = typed_tool("weather", "The weather in a city.", |args: Weather, _ctx| async move {
///     let unit = if args.metric.unwrap_or(true) { "21 °C" } else { "70 °F" };
///     format!("{}: sunny, {unit}", args.city)
/// });
/// assert_eq!(tool.input_schema()["required"], serde_json::json!(["city"]));
/// let events: Vec<ToolEvent> = futures::executor::block_on(
///     tool.call(serde_json::json!({"city": "Lyon"}), ToolContext::new("toolu_1")).collect(),
/// );
/// assert_eq!(events, [ToolEvent::Result(ToolOutput::text("Lyon: sunny, 21 °C"))]);
///
/// // Bad input is an error result the model reads.
/// let events: Vec<ToolEvent> = futures::executor::block_on(
///     tool.call(serde_json::json!({"town": "Lyon"}), ToolContext::new("toolu_2")).collect(),
/// );
/// let [ToolEvent::Result(output)] = &events[..] else { panic!("one result") };
/// assert!(output.is_error);
/// ```
pub fn typed_tool<A, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> Typed<FnTool<A, F>>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    Typed::new(
        name,
        description,
        FnTool {
            f: Arc::new(f),
            args: PhantomData,
        },
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;
    use crate::tool::ToolEvent;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// A path.
        path: String,
        /// From this line.
        offset: Option<u32>,
        tags: Vec<String>,
        mode: Mode,
        nested: Option<Nested>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Careful,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct Nested {
        depth: u8,
        ratio: f64,
    }

    fn output_of(tool: &dyn Tool, input: Value) -> ToolOutput {
        let events: Vec<ToolEvent> =
            futures::executor::block_on(tool.call(input, ToolContext::new("toolu_1")).collect());
        match events.as_slice() {
            [ToolEvent::Result(output)] => output.clone(),
            other => ToolOutput::error(format!("not one result: {other:?}")),
        }
    }

    fn text(output: &ToolOutput) -> &str {
        match &output.content {
            threadline_wire::Content::Text(t) => t,
            threadline_wire::Content::Blocks(_) => "",
        }
    }

    #[test]
    fn the_schema_is_an_inlined_object_without_rust_noise() {
        let schema = schema_for::<Args>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["mode", "path", "tags"]));
        assert_eq!(schema["properties"]["path"]["description"], "A path.");
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            json!(["fast", "careful"])
        );
        assert_eq!(
            schema["properties"]["nested"]["properties"]["depth"]["type"],
            "integer"
        );
        let text = schema.to_string();
        for noise in ["$schema", "title", "$ref", "definitions", "uint", "double"] {
            assert!(!text.contains(noise), "{noise} in {text}");
        }
    }

    #[test]
    fn bad_input_is_an_error_result_naming_the_field() {
        let tool = typed_tool("t", "d", |args: Args, _ctx| async move { args.path });
        let missing = output_of(&tool, json!({"tags": [], "mode": "fast"}));
        assert!(missing.is_error);
        assert_eq!(text(&missing), "invalid input: missing field `path`");
        let wrong = output_of(&tool, json!({"path": 3, "tags": [], "mode": "fast"}));
        assert!(wrong.is_error);
        assert!(text(&wrong).starts_with("invalid input: invalid type: integer `3`"));
        let ok = output_of(&tool, json!({"path": "a", "tags": [], "mode": "fast"}));
        assert_eq!(ok, ToolOutput::text("a"));
    }

    #[test]
    fn results_and_errors_of_the_closure_become_outputs() {
        #[derive(Deserialize, JsonSchema)]
        struct N {
            n: i64,
        }
        let tool = typed_tool("half", "d", |args: N, _ctx| async move {
            if args.n % 2 == 0 {
                Ok(format!("{}", args.n / 2))
            } else {
                Err(format!("{} is odd", args.n))
            }
        })
        .concurrency_safe()
        .idempotent();
        assert!(tool.is_concurrency_safe(&json!({})) && tool.is_idempotent(&json!({})));
        assert_eq!(output_of(&tool, json!({"n": 4})), ToolOutput::text("2"));
        assert_eq!(
            output_of(&tool, json!({"n": 3})),
            ToolOutput::error("3 is odd")
        );
        assert_eq!(tool.name(), "half");
    }

    fn arb_args() -> impl Strategy<Value = Args> {
        (
            ".{0,12}",
            proptest::option::of(any::<u32>()),
            proptest::collection::vec(".{0,6}", 0..4),
            prop_oneof![Just(Mode::Fast), Just(Mode::Careful)],
            proptest::option::of(
                (any::<u8>(), -1e6f64..1e6).prop_map(|(depth, ratio)| Nested { depth, ratio }),
            ),
        )
            .prop_map(|(path, offset, tags, mode, nested)| Args {
                path,
                offset,
                tags,
                mode,
                nested,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Every value of `Args`, serialized, passes the derived schema (the loop's check)
        /// and parses back to itself: the schema never rejects what the tool accepts.
        #[test]
        fn every_value_fits_its_schema_and_round_trips(args in arb_args()) {
            let schema = schema_for::<Args>();
            let input = serde_json::to_value(&args).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(crate::schema::check(&schema, &input).is_ok(), "{input} against {schema}");
            let parsed: Args = parse_args(input).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(parsed, args);
        }

        /// Whatever the model sends, the call answers one result and never panics; an input
        /// the schema rejects never reaches the function.
        #[test]
        fn any_input_gives_one_result(input in arb_json()) {
            let tool = typed_tool("t", "d", |args: Args, _ctx| async move { args.path });
            let output = output_of(&tool, input.clone());
            if parse_args::<Args>(input).is_err() {
                prop_assert!(output.is_error);
            }
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,8}".prop_map(Value::String),
            Just(json!("fast")),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("path".to_owned()),
                        Just("tags".to_owned()),
                        Just("mode".to_owned()),
                        ".{0,4}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
