//! Reading the command line's input files.

use std::io::Read;

/// The bytes of `path`, or of stdin for `-`; the error is one printable line.
pub(crate) fn read_input(path: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    if path == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("threadline: cannot read stdin: {e}"))?;
    } else {
        bytes = std::fs::read(path).map_err(|e| format!("threadline: cannot read {path}: {e}"))?;
    }
    Ok(bytes)
}
