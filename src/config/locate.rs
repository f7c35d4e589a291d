//! The JSON path (`servers[0].tools[1].http.url`) at a byte offset of a configuration's text,
//! so a parse error can say where it is without wrapping every deserializer.

enum Frame {
    Object { key: Option<String> },
    Array { index: usize, started: bool },
}

/// The path of the value being read at `offset`: every enclosing member and element, innermost
/// last. With `container_only`, the innermost object's current member is left off (for
/// "missing field", which belongs to the object rather than to the member read last).
pub fn path_at(text: &str, offset: usize, container_only: bool) -> String {
    let bytes = text.as_bytes().get(..offset).unwrap_or(text.as_bytes());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if let Some(Frame::Array { started, .. }) = stack.last_mut() {
            if !b.is_ascii_whitespace() && b != b']' {
                *started = true;
            }
        }
        match b {
            b'{' => stack.push(Frame::Object { key: None }),
            b'[' => stack.push(Frame::Array { index: 0, started: false }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array { index, .. }) => *index += 1,
                Some(Frame::Object { key }) => *key = None,
                None => {}
            },
            b'"' => {
                let end = string_end(bytes, i);
                if let Some(Frame::Object { key: key @ None }) = stack.last_mut() {
                    let raw = text.get(i..end).unwrap_or_default();
                    *key = Some(serde_json::from_slice::<String>(raw.as_bytes()).unwrap_or_else(|_| raw.trim_matches('"').to_string()));
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if container_only {
        if let Some(Frame::Object { key }) = stack.last_mut() {
            *key = None;
        }
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key) } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Array { index, started: true } => path.push_str(&format!("[{index}]")),
            _ => {}
        }
    }
    path
}

/// The index just past the string starting at `start` (or the end of the text, if unclosed).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::path_at;

    fn at(text: &str, marker: &str, container_only: bool) -> String {
        path_at(text, text.find(marker).unwrap(), container_only)
    }

    #[test]
    fn members_and_elements() {
        let text = r#"{"servers": [{"name": "s"}, {"tools": [{"a": 1}, {"http": {"url": "x", "timeoutMs": "y"}}]}]}"#;
        assert_eq!(at(text, r#", "timeoutMs""#, false), "servers[1].tools[1].http.url");
        assert_eq!(at(text, r#"}}]}]}"#, false), "servers[1].tools[1].http.timeoutMs");
        assert_eq!(at(text, r#"}}]}]}"#, true), "servers[1].tools[1].http");
        assert_eq!(at(text, r#"}, {"tools""#, true), "servers[0]");
        assert_eq!(path_at(text, 0, false), "");
    }

    #[test]
    fn strings_with_brackets_and_escapes() {
        let text = r#"{"a\"[{": {"b": "}],\"", "c": [ ]}}"#;
        assert_eq!(at(text, r#"}}"#, false), "a\"[{.c");
        assert_eq!(at(text, r#", "c""#, false), "a\"[{.b");
    }
}
