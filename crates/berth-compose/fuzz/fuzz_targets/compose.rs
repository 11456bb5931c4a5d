//! Any text through the compose loader (YAML with positions, interpolation, extends,
//! normalisation, the project checks) and both renderers: each must return a project or an
//! error, never panic or hang.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let variables: BTreeMap<String, String> =
        [("VAR".to_owned(), "value".to_owned())].into_iter().collect();
    if let Ok(project) =
        berth_compose::load::load_text(&text, "fuzz", Path::new("/fuzz"), &variables)
    {
        let _ = berth_compose::render::yaml(&project.model);
        let _ = berth_compose::render::json(&project.model);
        let _ = berth_compose::graph::levels(&project.services());
    }
});
