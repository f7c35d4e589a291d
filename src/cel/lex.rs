//! CEL's tokens: identifiers, string and number literals, and operators, each with its offset.

/// One token of an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Id(String),
    Str(String),
    Int(i64),
    Num(f64),
    Op(&'static str),
    End,
}

/// Longest first, so `<=` is not read as `<` then `=`.
const OPS: [&str; 22] = ["||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-", "*", "/", "%", "(", ")", "[", "]", ".", ",", "?", ":"];

/// The tokens of `source`, each with the byte offset it starts at, ending with [`Tok::End`].
pub fn lex(source: &str) -> Result<Vec<(Tok, usize)>, String> {
    let mut out = Vec::new();
    let mut rest = source.char_indices().peekable();
    'next: while let Some(&(at, c)) = rest.peek() {
        let tail = source.get(at..).unwrap_or_default();
        if c.is_ascii_whitespace() {
            rest.next();
            continue;
        }
        let word = |ok: fn(char) -> bool| tail.find(|ch: char| !ok(ch)).unwrap_or(tail.len());
        let len = if c.is_ascii_alphabetic() || c == '_' {
            let len = word(|ch| ch.is_ascii_alphanumeric() || ch == '_');
            out.push((Tok::Id(tail.get(..len).unwrap_or_default().to_string()), at));
            len
        } else if c.is_ascii_digit() {
            let len = word(|ch| ch.is_ascii_alphanumeric() || ch == '.');
            let text = tail.get(..len).unwrap_or_default();
            // serde_json's number parser, so the module carries one; CEL's `u` suffix and hex are not read.
            let token = if text.bytes().all(|b| b.is_ascii_digit()) {
                Tok::Int(text.parse().map_err(|_| format!("{text} at {at} is too large for an integer"))?)
            } else {
                Tok::Num(serde_json::from_slice::<serde_json::Number>(text.as_bytes()).ok().and_then(|n| n.as_f64()).ok_or_else(|| format!("{text:?} at {at} is not a number"))?)
            };
            out.push((token, at));
            len
        } else if c == '"' || c == '\'' {
            let (text, len) = string(tail, c).ok_or_else(|| format!("the string at {at} is not closed"))?;
            out.push((Tok::Str(text), at));
            len
        } else if let Some(op) = OPS.iter().find(|op| tail.starts_with(**op)) {
            out.push((Tok::Op(op), at));
            op.len()
        } else {
            return Err(format!("{c:?} at {at} is not part of the language"));
        };
        while rest.peek().is_some_and(|&(i, _)| i < at + len) {
            rest.next();
        }
        continue 'next;
    }
    out.push((Tok::End, source.len()));
    Ok(out)
}

/// A quoted string at the start of `tail` (quote `q`): its value and its length in bytes.
/// Escapes: `\n`, `\t`, `\r`, and a backslash before any other character stands for it.
fn string(tail: &str, q: char) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = tail.char_indices().skip(1);
    while let Some((i, ch)) = chars.next() {
        match ch {
            _ if ch == q => return Some((value, i + ch.len_utf8())),
            '\\' => value.push(match chars.next()?.1 {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                other => other,
            }),
            _ => value.push(ch),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_their_offsets() {
        let toks = lex("a.b <= 'x\\'y' && 12 || 1.5").unwrap();
        let kinds: Vec<Tok> = toks.iter().map(|(t, _)| t.clone()).collect();
        assert_eq!(kinds, [Tok::Id("a".into()), Tok::Op("."), Tok::Id("b".into()), Tok::Op("<="), Tok::Str("x'y".into()), Tok::Op("&&"), Tok::Int(12), Tok::Op("||"), Tok::Num(1.5), Tok::End]);
        assert_eq!(toks.iter().map(|(_, at)| *at).collect::<Vec<_>>(), [0, 1, 2, 4, 7, 14, 17, 20, 23, 26]);
    }

    #[test]
    fn unicode_strings_are_kept_as_written_and_faults_say_where() {
        assert_eq!(lex("\"ａcmé\"").unwrap()[0].0, Tok::Str("ａcmé".into()));
        assert_eq!(lex("a # b").unwrap_err(), "'#' at 2 is not part of the language");
        assert_eq!(lex("'open").unwrap_err(), "the string at 0 is not closed");
        assert_eq!(lex("1x").unwrap_err(), "\"1x\" at 0 is not a number");
        assert_eq!(lex("99999999999999999999").unwrap_err(), "99999999999999999999 at 0 is too large for an integer");
        assert_eq!(lex("2e3").unwrap()[0].0, Tok::Num(2000.0));
    }
}
