//! Secrets hidden from whatever leaves the server. A [`Redactor`] is built once from secret values
//! and replaces each of them with `[redacted]` wherever a text holds it, in every spelling the
//! secret can take there:
//!
//! - as written;
//! - JSON-escaped: `\"`, `\\`, `\/`, `\b` `\f` `\n` `\r` `\t`, `\uXXXX` in either hex case (a
//!   surrogate pair for a character beyond the BMP), and deeper, since a JSON text inside a JSON
//!   string doubles every backslash (`\\u0041`, `\\\"`, `\\\\`, `\\/`): an upstream's JSON-in-JSON
//!   text is three levels deep in the message that carries it, and up to four are matched;
//! - percent-encoded: `%XX` in either case (each byte of a UTF-8 character), `+` for a space;
//! - as HTML character references: `&#NN;` and `&#xHH;` (leading zeros, `X`, and the `;` left
//!   out as browsers allow), and the named references of ASCII punctuation (`&amp;` `&lt;`
//!   `&gt;` `&quot;` `&apos;` `&sol;` `&colon;` `&equals;` `&plus;` …);
//! - base64 and base64url, padded or not, also inside a longer encoded value: at each of the
//!   three byte alignments, the characters that depend on the secret's bytes alone (its stable
//!   core) are matched as they are.
//!
//! The first four mix freely: each character of a secret may take any of its spellings, as
//! encoders leave some characters literal and escape others. Matching is one pass over the text:
//! a table of the byte pairs an occurrence can begin with rules out almost every position at the
//! cost of one lookup, and only the rest decode a character and try the secrets that begin with it.
//!
//! **Cuts.** A text is redacted whole before anything cuts it (an excerpt, a line), so a cut
//! never shows the first part of a secret whose whole it hid. Where the rest of a text was never
//! read (a reader's byte cap, a stream that ended there), [`Redactor::redact_unread`] also
//! replaces a trailing piece that could begin an occurrence once it goes past the spelling of the
//! secret's first character. So wherever the caller makes the cut land, it shows at most that
//! first character (in base64, one character of the stable core: 6 bits, after up to 4 bits mixed
//! into the character before it). A lone first character is let through: some secret begins
//! with almost any last character (a letter, or the `%`, `&`, `\` that begin its spellings), and
//! hiding it would take a character off most truncated replies to protect less than a byte.
//!
//! Where it runs: the edge redacts with the deployment's secrets at every exit (see
//! `edge::redaction`, where the messages it writes and stores, and its log lines, are made a
//! [`Redacted`]); a trace exporter, when there is one, calls the same redactor on each span.

use std::borrow::Cow;

/// What an occurrence of a secret becomes.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not looked for: a 3-character value would match ordinary words
/// and numbers everywhere, so hiding it would garble replies and protect nothing (a real secret is
/// far longer; the deployment's own keys need [`crate::keys::MIN_KEY_CHARS`]).
pub const MIN_SECRET_CHARS: usize = 4;

/// Secret values, ready to be found in any text.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// The values as given, each once: what [`Redactor::with`] builds on.
    secrets: Vec<String>,
    /// Each secret by its characters, each matched in any of its spellings.
    spelled: Vec<Vec<char>>,
    /// `(first character, index in spelled)`, sorted: the secrets a decoded character may begin.
    by_first: Vec<(char, usize)>,
    /// Byte strings matched as they are (the base64 cores), with their first two bytes, sorted.
    literals: Vec<(u16, Vec<u8>)>,
    /// The pairs of bytes an occurrence may begin with, one bit per pair.
    pairs: Vec<u64>,
    /// The bytes an occurrence may begin with: a first look at each position, before its pair.
    firsts: [bool; 256],
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor { secrets: Vec::new(), spelled: Vec::new(), by_first: Vec::new(), literals: Vec::new(), pairs: Vec::new(), firsts: [false; 256] }
    }
}

/// A message that has been through the deployment's redactor: what the edge's writers, stores
/// and buffered bodies take, so nothing reaches them unredacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted(String);

impl Redacted {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl Redactor {
    /// A redactor for `secrets` (those shorter than [`MIN_SECRET_CHARS`] are left out).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Redactor {
        let mut values: Vec<String> = secrets.into_iter().map(|s| s.as_ref().to_string()).filter(|s| s.chars().count() >= MIN_SECRET_CHARS).collect();
        values.sort_unstable();
        values.dedup();
        let mut redactor = Redactor { pairs: vec![0; 1024], ..Redactor::default() };
        for secret in &values {
            redactor.add(secret);
        }
        redactor.by_first.sort_unstable();
        redactor.literals.sort_unstable();
        redactor.literals.dedup();
        redactor.secrets = values;
        redactor
    }

    /// This redactor's secrets and `more` (a call's own credentials beside the deployment's):
    /// a copy with the new ones added, cheaper than building all anew.
    pub fn with<S: AsRef<str>>(&self, more: impl IntoIterator<Item = S>) -> Redactor {
        let mut redactor = self.clone();
        if redactor.pairs.is_empty() {
            redactor.pairs = vec![0; 1024];
        }
        for secret in more {
            let secret = secret.as_ref();
            if secret.chars().count() >= MIN_SECRET_CHARS && !redactor.secrets.iter().any(|s| s == secret) {
                redactor.add(secret);
                redactor.secrets.push(secret.to_string());
            }
        }
        redactor.by_first.sort_unstable();
        redactor.literals.sort_unstable();
        redactor.literals.dedup();
        redactor
    }

    /// Whether it has nothing to look for.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The secret values it looks for.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// `text` with every occurrence of a secret, in any spelling, replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.scan(text, false)
    }

    /// The same for a text whose rest was never read: a trailing piece that could begin an
    /// occurrence and goes beyond the spelling of its first character (or, in base64, holds two
    /// characters of its core) is replaced too.
    pub fn redact_unread<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.scan(text, true)
    }

    /// `text` redacted, without a copy when it holds no secret.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// A message redacted, as the edge's exits take it.
    pub fn seal(&self, text: String) -> Redacted {
        Redacted(self.redact_owned(text))
    }

    fn add(&mut self, secret: &str) {
        let chars: Vec<char> = secret.chars().collect();
        let (Some(&c0), Some(&c1)) = (chars.first(), chars.get(1)) else { return };
        let index = self.spelled.len();
        self.by_first.push((c0, index));
        for (a, b) in starts(c0, c1) {
            self.mark(a, b);
        }
        self.spelled.push(chars);
        for core in base64_cores(secret.as_bytes()) {
            if let (Some(&a), Some(&b)) = (core.first(), core.get(1)) {
                self.mark(a, b);
                self.literals.push((pair(a, b), core));
            }
        }
    }

    fn mark(&mut self, a: u8, b: u8) {
        let p = usize::from(pair(a, b));
        if let Some(word) = self.pairs.get_mut(p >> 6) {
            *word |= 1 << (p & 63);
        }
        if let Some(first) = self.firsts.get_mut(usize::from(a)) {
            *first = true;
        }
    }

    /// Whether an occurrence may begin with the bytes `a`, `b`.
    fn marked(&self, a: u8, b: u8) -> bool {
        if self.firsts.get(usize::from(a)) != Some(&true) {
            return false;
        }
        let p = usize::from(pair(a, b));
        self.pairs.get(p >> 6).is_some_and(|w| w >> (p & 63) & 1 == 1)
    }

    fn scan<'a>(&self, text: &'a str, unread: bool) -> Cow<'a, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let t = text.as_bytes();
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut scratch = Scratch::default();
        let mut i = 0;
        while i < t.len() {
            // The common case: no pair of bytes in the text begins an occurrence.
            match t.get(i..).and_then(|rest| rest.windows(2).position(|w| matches!(w, [a, b] if self.marked(*a, *b)))) {
                Some(skip) => i += skip,
                None => break,
            }
            let found = self.at(t, i, unread, &mut scratch);
            let end = match found {
                Found::Whole(end) => end,
                Found::Tail => t.len(),
                Found::Nothing => {
                    i += 1;
                    continue;
                }
            };
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(text.get(copied..i).unwrap_or_default());
            out.push_str(REDACTED);
            copied = end;
            i = end;
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut out) => {
                out.push_str(text.get(copied..).unwrap_or_default());
                Cow::Owned(out)
            }
        }
    }

    /// The longest occurrence that begins at `i`, or (`unread`) whether the text ends inside one,
    /// past its first character.
    fn at(&self, t: &[u8], i: usize, unread: bool, scratch: &mut Scratch) -> Found {
        let mut best: Option<usize> = None;
        let mut tail = false;
        let rest = t.get(i..).unwrap_or_default();
        if let (Some(&a), Some(&b)) = (rest.first(), rest.get(1)) {
            let key = pair(a, b);
            let from = self.literals.partition_point(|(k, _)| *k < key);
            for (_, core) in self.literals.iter().skip(from).take_while(|(k, _)| *k == key) {
                if rest.starts_with(core) {
                    best = best.max(Some(i + core.len()));
                } else if unread && rest.len() < core.len() && core.starts_with(rest) {
                    tail = true;
                }
            }
        }
        scratch.firsts.clear();
        decode_at(t, i, &mut scratch.firsts);
        let firsts = std::mem::take(&mut scratch.firsts);
        for &(c, after) in &firsts {
            let from = self.by_first.partition_point(|(k, _)| *k < c);
            for &(_, index) in self.by_first.iter().skip(from).take_while(|(k, _)| *k == c) {
                let Some(chars) = self.spelled.get(index) else { continue };
                match follow(chars.get(1..).unwrap_or_default(), t, after, unread, scratch) {
                    Found::Whole(end) => best = best.max(Some(end)),
                    Found::Tail => tail = true,
                    Found::Nothing => {}
                }
            }
        }
        scratch.firsts = firsts;
        match (best, tail) {
            (Some(end), _) => Found::Whole(end),
            (None, true) => Found::Tail,
            (None, false) => Found::Nothing,
        }
    }
}

/// What begins at a position: an occurrence ending at a byte, the text's end inside one (only
/// looked for in an unread text), or nothing.
enum Found {
    Whole(usize),
    Tail,
    Nothing,
}

/// Buffers reused across the positions of one scan.
#[derive(Default)]
struct Scratch {
    firsts: Vec<(char, usize)>,
    here: Vec<usize>,
    next: Vec<usize>,
    decoded: Vec<(char, usize)>,
}

/// Matches `chars` from `start`: every position a spelling of each character can reach is kept
/// (spellings overlap: `\\` is a backslash written once, or one escaped), so one pass finds the
/// longest occurrence without backtracking.
fn follow(chars: &[char], t: &[u8], start: usize, unread: bool, scratch: &mut Scratch) -> Found {
    let mut here = std::mem::take(&mut scratch.here);
    let mut next = std::mem::take(&mut scratch.next);
    here.clear();
    here.push(start);
    let mut tail = false;
    for (k, &c) in chars.iter().enumerate() {
        next.clear();
        for &q in &here {
            if q >= t.len() {
                // The text ends after the secret's first k + 1 characters: one is all it may show.
                tail |= unread && k > 0;
                continue;
            }
            scratch.decoded.clear();
            decode_at(t, q, &mut scratch.decoded);
            next.extend(scratch.decoded.iter().filter(|(d, _)| *d == c).map(|(_, end)| *end));
            // The text may end inside the spelling of `c`, after the first character: a longer
            // spelling than one that matched, too (`\u` of `\u005c` begins with `\`, a
            // backslash as written).
            if unread && could_begin(c, t.get(q..).unwrap_or_default()) {
                tail = true;
            }
        }
        next.sort_unstable();
        next.dedup();
        std::mem::swap(&mut here, &mut next);
        if here.is_empty() {
            break;
        }
    }
    let found = match here.iter().max() {
        Some(&end) => Found::Whole(end),
        None if tail => Found::Tail,
        None => Found::Nothing,
    };
    scratch.here = here;
    scratch.next = next;
    found
}

fn pair(a: u8, b: u8) -> u16 {
    (u16::from(a) << 8) | u16::from(b)
}

/// The byte pairs a spelling of `c0` followed by `c1` can begin with.
fn starts(c0: char, c1: char) -> Vec<(u8, u8)> {
    let mut pairs = Vec::new();
    let mut buffer = [0u8; 4];
    let lead = c0.encode_utf8(&mut buffer).as_bytes().to_vec();
    // The first character as written, or a space as `+`: the next byte begins the second
    // character's spelling (or is the rest of a multi-byte character).
    let mut written = vec![lead.first().copied().unwrap_or_default()];
    if c0 == ' ' {
        written.push(b'+');
    }
    let seconds: Vec<u8> = match lead.get(1) {
        Some(&b) => vec![b],
        None => first_bytes(c1),
    };
    for &a in &written {
        for &b in &seconds {
            pairs.push((a, b));
        }
    }
    // `%XX`: the high digit of the first byte, in either case.
    for digit in hex_digits(lead.first().copied().unwrap_or_default() >> 4) {
        pairs.push((b'%', digit));
    }
    // `&#…`, or a named reference.
    pairs.push((b'&', b'#'));
    for (name, _, _) in NAMED.iter().filter(|(_, c, _)| *c == c0) {
        if let Some(&b) = name.as_bytes().first() {
            pairs.push((b'&', b));
        }
    }
    // `\uXXXX`, a short escape, or the deeper level's `\\`.
    pairs.push((b'\\', b'u'));
    pairs.push((b'\\', b'\\'));
    if let Some(letter) = short_escape(c0) {
        pairs.push((b'\\', letter));
    }
    pairs
}

/// The bytes a spelling of `c` can begin with.
fn first_bytes(c: char) -> Vec<u8> {
    let mut buffer = [0u8; 4];
    let mut bytes = vec![c.encode_utf8(&mut buffer).as_bytes().first().copied().unwrap_or_default(), b'%', b'&', b'\\'];
    if c == ' ' {
        bytes.push(b'+');
    }
    bytes
}

/// The two spellings of a hex digit.
fn hex_digits(nibble: u8) -> Vec<u8> {
    let lower = char::from_digit(u32::from(nibble & 15), 16).unwrap_or('0') as u8;
    let mut digits = vec![lower];
    if lower.is_ascii_alphabetic() {
        digits.push(lower.to_ascii_uppercase());
    }
    digits
}

/// The letter of a character's short JSON escape (`\n`), if it has one.
fn short_escape(c: char) -> Option<u8> {
    Some(match c {
        '"' => b'"',
        '\\' => b'\\',
        '/' => b'/',
        '\u{8}' => b'b',
        '\u{c}' => b'f',
        '\n' => b'n',
        '\r' => b'r',
        '\t' => b't',
        _ => return None,
    })
}

/// The character a short escape's letter stands for.
fn unescape(letter: u8) -> Option<char> {
    Some(match letter {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// The HTML named references of ASCII punctuation, tab and newline; `true`: a legacy name that
/// browsers also read without its `;`.
const NAMED: &[(&str, char, bool)] = &[
    ("Tab;", '\t', false),
    ("NewLine;", '\n', false),
    ("excl;", '!', false),
    ("quot;", '"', true),
    ("QUOT;", '"', true),
    ("num;", '#', false),
    ("dollar;", '$', false),
    ("percnt;", '%', false),
    ("amp;", '&', true),
    ("AMP;", '&', true),
    ("apos;", '\'', false),
    ("lpar;", '(', false),
    ("rpar;", ')', false),
    ("ast;", '*', false),
    ("midast;", '*', false),
    ("plus;", '+', false),
    ("comma;", ',', false),
    ("period;", '.', false),
    ("sol;", '/', false),
    ("colon;", ':', false),
    ("semi;", ';', false),
    ("lt;", '<', true),
    ("LT;", '<', true),
    ("equals;", '=', false),
    ("gt;", '>', true),
    ("GT;", '>', true),
    ("quest;", '?', false),
    ("commat;", '@', false),
    ("lsqb;", '[', false),
    ("lbrack;", '[', false),
    ("bsol;", '\\', false),
    ("rsqb;", ']', false),
    ("rbrack;", ']', false),
    ("Hat;", '^', false),
    ("lowbar;", '_', false),
    ("UnderBar;", '_', false),
    ("grave;", '`', false),
    ("DiacriticalGrave;", '`', false),
    ("lcub;", '{', false),
    ("lbrace;", '{', false),
    ("verbar;", '|', false),
    ("vert;", '|', false),
    ("VerticalLine;", '|', false),
    ("rcub;", '}', false),
    ("rbrace;", '}', false),
];

/// Every character a spelling that begins at `q` stands for, with where that spelling ends.
fn decode_at(t: &[u8], q: usize, out: &mut Vec<(char, usize)>) {
    let Some(&b) = t.get(q) else { return };
    if let Some((c, width)) = utf8_at(t, q) {
        out.push((c, q + width));
    }
    match b {
        b'+' => out.push((' ', q + 1)),
        b'%' => out.extend(percent_at(t, q)),
        b'&' => html_at(t, q, out),
        b'\\' => json_at(t, q, out),
        _ => {}
    }
}

/// The UTF-8 character at `q`, and its width.
fn utf8_at(t: &[u8], q: usize) -> Option<(char, usize)> {
    let width = utf8_width(*t.get(q)?)?;
    let c = std::str::from_utf8(t.get(q..q + width)?).ok()?.chars().next()?;
    Some((c, width))
}

fn utf8_width(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7f => Some(1),
        0xc2..=0xdf => Some(2),
        0xe0..=0xef => Some(3),
        0xf0..=0xf4 => Some(4),
        _ => None,
    }
}

fn hex(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

/// A character percent-encoded at `q`, each of its UTF-8 bytes as `%XX`.
fn percent_at(t: &[u8], q: usize) -> Option<(char, usize)> {
    let byte = |at: usize| -> Option<u8> {
        (*t.get(at)? == b'%').then_some(())?;
        Some(((hex(*t.get(at + 1)?)? << 4) | hex(*t.get(at + 2)?)?) as u8)
    };
    let lead = byte(q)?;
    let width = utf8_width(lead)?;
    let mut bytes = [lead, 0, 0, 0];
    for (k, slot) in bytes.iter_mut().enumerate().take(width).skip(1) {
        *slot = byte(q + 3 * k)?;
    }
    let c = std::str::from_utf8(bytes.get(..width)?).ok()?.chars().next()?;
    Some((c, q + 3 * width))
}

/// An HTML character reference at `q`: numeric (digits read greedily, as browsers do), or named.
fn html_at(t: &[u8], q: usize, out: &mut Vec<(char, usize)>) {
    if t.get(q + 1) == Some(&b'#') {
        let (base, start) = match t.get(q + 2) {
            Some(b'x' | b'X') => (16, q + 3),
            _ => (10, q + 2),
        };
        let mut value: u32 = 0;
        let mut r = start;
        while let Some(digit) = t.get(r).and_then(|&d| char::from(d).to_digit(base)) {
            value = value.saturating_mul(base).saturating_add(digit);
            r += 1;
        }
        if r > start {
            let end = if t.get(r) == Some(&b';') { r + 1 } else { r };
            if let Some(c) = char::from_u32(value) {
                out.push((c, end));
            }
        }
        return;
    }
    let rest = t.get(q + 1..).unwrap_or_default();
    for (name, c, legacy) in NAMED {
        if rest.starts_with(name.as_bytes()) {
            out.push((*c, q + 1 + name.len()));
        } else if *legacy && rest.starts_with(name.trim_end_matches(';').as_bytes()) {
            out.push((*c, q + name.len()));
        }
    }
}

/// How many JSON strings deep an escape is looked for: in a message (1), in a JSON text inside
/// one of its strings (2: an upstream that returns JSON as text), and two levels more, which cost
/// nothing where there are none.
const JSON_LEVELS: u32 = 4;

/// The JSON escapes at `q`, at every level: at level n a quote is 2^n - 1 backslashes and the
/// quote, a backslash is 2^n backslashes, and any other escape is 2^(n-1) backslashes and its
/// letter (`\n`, `\u0041`; one level deeper `\\n`, `\\\"`, `\\\\`).
fn json_at(t: &[u8], q: usize, out: &mut Vec<(char, usize)>) {
    // Counted no further than the deepest escape needs: a long run costs no more per position.
    let run = t.get(q..).unwrap_or_default().iter().take((1 << JSON_LEVELS) + 1).take_while(|&&b| b == b'\\').count();
    for level in 1..=JSON_LEVELS {
        let (intro, quote, backslash) = (1usize << (level - 1), (1usize << level) - 1, 1usize << level);
        if backslash <= run {
            out.push(('\\', q + backslash));
        }
        if run == quote && t.get(q + quote) == Some(&b'"') {
            out.push(('"', q + quote + 1));
        }
        if run == intro {
            out.extend(json_letter(t, q, intro));
        }
    }
}

/// An escape with a letter (`u`, `/`, `n`, …) after `intro` backslashes at `q`.
fn json_letter(t: &[u8], q: usize, intro: usize) -> Option<(char, usize)> {
    let unit = |at: usize| -> Option<(u32, usize)> {
        if !t.get(at..at + intro)?.iter().all(|&b| b == b'\\') {
            return None;
        }
        let r = at + intro;
        match *t.get(r)? {
            b'u' => {
                let digits = t.get(r + 1..r + 5)?;
                let value = digits.iter().try_fold(0u32, |v, &d| Some((v << 4) | hex(d)?))?;
                Some((value, r + 5))
            }
            // A quote or a backslash is not a letter: their escapes are the runs above.
            b'"' | b'\\' => None,
            letter => Some((u32::from(unescape(letter)?), r + 1)),
        }
    };
    let (first, end) = unit(q)?;
    if (0xd800..0xdc00).contains(&first) {
        let (low, end) = unit(end)?;
        if !(0xdc00..0xe000).contains(&low) {
            return None;
        }
        let c = char::from_u32(0x10000 + ((first - 0xd800) << 10) + (low - 0xdc00))?;
        return Some((c, end));
    }
    Some((char::from_u32(first)?, end))
}

/// The longest spelling of one character that has a fixed length: a surrogate pair four JSON
/// levels deep (`\\\\\\\\ud83d` twice).
const LONGEST_SPELLING: usize = 26;

/// Whether `rest`, the end of a text, is the beginning of a spelling of `c` (and no whole one).
fn could_begin(c: char, rest: &[u8]) -> bool {
    // No spelling is this long but a numeric reference's, whose zeros may run on.
    if rest.is_empty() || (rest.len() > LONGEST_SPELLING && rest.first() != Some(&b'&')) {
        return false;
    }
    let proper = |spelling: &[u8], ignore_case: bool| {
        rest.len() < spelling.len() && spelling.get(..rest.len()).is_some_and(|s| if ignore_case { s.eq_ignore_ascii_case(rest) } else { s == rest })
    };
    let mut buffer = [0u8; 4];
    let utf8 = c.encode_utf8(&mut buffer).as_bytes();
    if proper(utf8, false) {
        return true;
    }
    let percent: String = utf8.iter().map(|b| format!("%{b:02X}")).collect();
    if proper(percent.as_bytes(), true) {
        return true;
    }
    // JSON, at every level: the `\u` form (a surrogate pair beyond the BMP) and the short escape.
    let mut units = [0u16; 2];
    let units: String = c.encode_utf16(&mut units).iter().map(|u| format!("\\u{u:04x}")).collect();
    let deeper = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut level: Vec<String> = std::iter::once(units).chain(short_escape(c).map(|letter| format!("\\{}", char::from(letter)))).collect();
    for _ in 0..JSON_LEVELS {
        if level.iter().any(|s| proper(s.as_bytes(), true)) {
            return true;
        }
        level = level.iter().map(|s| deeper(s)).collect();
    }
    if NAMED.iter().filter(|(_, n, _)| *n == c).any(|(name, _, _)| proper(format!("&{name}").as_bytes(), false)) {
        return true;
    }
    could_begin_numeric(c, rest)
}

/// Whether `rest` begins an HTML numeric reference to `c`: `&`, `&#`, `&#x`, then any zeros and
/// the start of its number (or all of it, the `;` not read yet).
fn could_begin_numeric(c: char, rest: &[u8]) -> bool {
    let Some(after) = rest.strip_prefix(b"&") else { return false };
    let Some(after) = (if after.is_empty() { return true } else { after.strip_prefix(b"#") }) else { return false };
    let (digits, number) = match after.first() {
        Some(b'x' | b'X') => (after.get(1..).unwrap_or_default(), format!("{:x}", u32::from(c))),
        _ => (after, u32::from(c).to_string()),
    };
    let significant: &[u8] = match digits.iter().position(|&d| d != b'0') {
        Some(p) => digits.get(p..).unwrap_or_default(),
        None => &[],
    };
    significant.len() <= number.len() && number.as_bytes().get(..significant.len()).is_some_and(|n| n.eq_ignore_ascii_case(significant))
}

/// The stable cores of a secret's base64 and base64url encodings, at each alignment: the
/// characters that depend on its bytes alone, whatever comes before or after it.
fn base64_cores(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut cores = Vec::new();
    for align in 0..3usize {
        let mut padded = vec![0u8; align];
        padded.extend_from_slice(bytes);
        // Character k holds bits 6k..6k+6 of the input; the secret's are 8·align..8·(align+n).
        let start = (8 * align).div_ceil(6);
        let end = 8 * (align + bytes.len()) / 6;
        for encoded in [crate::base64::encode(&padded), crate::base64::encode_url(&padded)] {
            if let Some(core) = encoded.as_bytes().get(start..end).filter(|c| !c.is_empty()) {
                if !cores.iter().any(|known: &Vec<u8>| known == core) {
                    cores.push(core.to_vec());
                }
            }
        }
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(secrets: &[&str], text: &str) -> String {
        Redactor::new(secrets).redact(text).into_owned()
    }

    #[test]
    fn secrets_as_written_and_json_escaped() {
        let secrets = ["s3cr3t-key", "a\"b\\c/d", "abc", "two\nlines"];
        let text = r#"{"text":"bad key s3cr3t-key for a\"b\\c/d; abc; two\nlines"}"#;
        assert_eq!(redacted(&secrets, text), r#"{"text":"bad key [redacted] for [redacted]; abc; [redacted]"}"#);
        assert_eq!(redacted(&secrets, "raw a\"b\\c/d and two\nlines"), "raw [redacted] and [redacted]");
    }

    #[test]
    fn every_spelling_is_found() {
        let secret = "Ab/+ é😀";
        let spellings = [
            "Ab/+ é😀",
            "Ab\\/+ \\u00e9\\ud83d\\ude00",
            "\\u0041\\u0062\\u002F\\u002b\\u0020\\u00E9\\uD83D\\uDE00",
            "\\\\u0041b\\\\/+\\\\u0020é\\\\ud83d\\\\ude00",
            "%41%62%2f%2B+%C3%A9%F0%9F%98%80",
            "Ab%2F%2b%20%c3%a9😀",
            "&#65;&#x62;&sol;&plus;&#032;&#xE9;&#128512;",
            "&#0065&#98&#x2F;+ é&#x1F600;",
            "A&#98;/&#43; &eacute;😀",
        ];
        for spelling in spellings.iter().take(8) {
            assert_eq!(redacted(&[secret], &format!("<{spelling}>")), "<[redacted]>", "{spelling}");
        }
        // A named reference outside ASCII punctuation is not one of the spellings.
        assert_eq!(redacted(&[secret], spellings[8]), spellings[8]);
    }

    #[test]
    fn base64_at_every_alignment_padded_or_not() {
        let secret = "sk-live-4f9a2c";
        for prefix in ["", "x", "xy", "xyz"] {
            for suffix in ["", "!", "!?"] {
                let value = format!("{prefix}{secret}{suffix}");
                let standard = crate::base64::encode(value.as_bytes());
                let url = crate::base64::encode_url(value.as_bytes());
                for encoded in [standard.clone(), standard.trim_end_matches('=').to_string(), url] {
                    let out = redacted(&[secret], &format!("data:{encoded};"));
                    assert!(out.contains(REDACTED), "{prefix}|{suffix}: {out}");
                    assert!(!out.contains(&crate::base64::encode(secret.as_bytes())[..8]), "{out}");
                }
            }
        }
    }

    #[test]
    fn short_values_and_texts_without_secrets_are_left_alone() {
        let r = Redactor::new(["abc", "", "key-1234"]);
        assert_eq!(r.secrets(), ["key-1234"]);
        let text = "abc %41 &#65; \\u0041 a+b key-123 key-12345";
        assert_eq!(r.redact(text), "abc %41 &#65; \\u0041 a+b key-123 [redacted]5");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new(Vec::<String>::new()).is_empty());
    }

    #[test]
    fn the_longest_occurrence_wins_and_the_rest_is_kept() {
        let r = Redactor::new(["abcd", "abcdef"]);
        assert_eq!(r.redact("xabcdefy abcdx"), "x[redacted]y [redacted]x");
        let r = Redactor::new(["back\\slash"]);
        // A backslash written once, or escaped: both are the secret's.
        assert_eq!(r.redact("back\\slash back\\\\slash back\\\\\\\\slash"), "[redacted] [redacted] [redacted]");
    }

    #[test]
    fn an_unread_tail_that_begins_a_secret_is_redacted_past_its_first_character() {
        let r = Redactor::new(["s3cr3t-key"]);
        for cut in 2.."s3cr3t-key".len() {
            let text = format!("answer: {}", &"s3cr3t-key"[..cut]);
            assert_eq!(r.redact_unread(&text), "answer: [redacted]", "{text}");
            assert_eq!(r.redact(&text), text, "a read text keeps what is no secret");
        }
        for shown in ["answer: s", "answer: %7", "answer: &#00", "answer: \\u00", "answer: none"] {
            assert_eq!(r.redact_unread(shown), shown, "one character, or a part of one, shows");
        }
        for cut in ["answer: s%3", "answer: %73&#", "answer: \\u0073\\u00", "answer: &#x73;3"] {
            assert_eq!(r.redact_unread(cut), "answer: [redacted]", "{cut}");
        }
    }

    #[test]
    fn any_text_keeps_no_secret_as_written_nor_ends_with_more_than_its_first_character_when_unread() {
        // Texts stitched from pieces of spellings and stray bytes, from a fixed xorshift seed: the
        // fuzz target `framing` holds the same properties on any bytes.
        let secrets = ["s3cr3t-k3y/+&\"<\\ ~", "QUJDREVG"];
        let r = Redactor::new(secrets);
        let pieces = ["s3cr3t", "-k3y", "%2F", "%2b", "/", "+", "&", "&amp;", "&#x2F;", "&#0", "\"", "\\\"", "\\", "\\\\", "<", "\\u003C", " ", "+", "~", "czNjcjN0", "LWszeS8r", "QUJD", "REVG", "x", "é", "%", "\\u", "[redacted]"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let (whole, unread) = (r.redact(&text), r.redact_unread(&text));
            for secret in secrets {
                assert!(!whole.contains(secret) && !unread.contains(secret), "{text:?}");
                assert!((2..secret.len()).all(|k| !unread.ends_with(&secret[..k])), "{text:?} → {unread:?}");
            }
        }
    }

    #[test]
    fn with_adds_a_calls_own_secrets() {
        let deployment = Redactor::new(["deploy-secret"]);
        let call = deployment.with(["caller-token"]);
        assert_eq!(call.redact("deploy-secret caller-token"), "[redacted] [redacted]");
        assert_eq!(deployment.redact("caller-token"), "caller-token");
    }
}
