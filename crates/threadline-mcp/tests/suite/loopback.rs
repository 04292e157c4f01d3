use std::sync::Arc;
