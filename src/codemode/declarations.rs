//! TEMPORARY on i44-core: replaced by the declarations helper's module at merge.
use serde_json::Value;
pub fn declare_all<'a>(tools: impl IntoIterator<Item = (&'a str, Option<&'a str>, &'a Value, Option<&'a Value>)>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for (name, _, _, _) in tools { out.push_str("  "); out.push_str(name); out.push_str("(args: unknown): Promise<unknown>;\n"); }
    out.push_str("};");
    out
}
