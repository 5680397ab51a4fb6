//! The hooks file: the same entries in three formats, and its mistakes named with the
//! file, entry, field and position.

use std::sync::Arc;

use harel_hooks::{Format, HooksFile, Scheme};

fn refused(text: &str, format: Format) -> String {
    HooksFile::parse(text, format, "hooks.x")
        .unwrap_err()
        .to_string()
}

#[test]
fn the_three_formats_read_the_same_entries() {
    let yaml = r#"
stripe:
  verify: {scheme: stripe, secret: "env:STRIPE_WHSEC"}
  dedupe: id
  execution: data.object.metadata.harel_order_id
  kind_from: type
  kinds: {payment_intent.succeeded: PaymentSucceeded}
  data: data.object
"#;
    let toml = r#"
[stripe]
verify = {scheme = "stripe", secret = "env:STRIPE_WHSEC"}
dedupe = "id"
execution = "data.object.metadata.harel_order_id"
kind_from = "type"
kinds = {"payment_intent.succeeded" = "PaymentSucceeded"}
data = "data.object"
"#;
    let json = r#"{"stripe": {
  "verify": {"scheme": "stripe", "secret": "env:STRIPE_WHSEC"},
  "dedupe": "id",
  "execution": "data.object.metadata.harel_order_id",
  "kind_from": "type",
  "kinds": {"payment_intent.succeeded": "PaymentSucceeded"},
  "data": "data.object"}}"#;
    let a = HooksFile::parse(yaml, Format::Yaml, "h").unwrap();
    let b = HooksFile::parse(toml, Format::Toml, "h").unwrap();
    let c = HooksFile::parse(json, Format::Json, "h").unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    let entry = &a.entries["stripe"];
    assert_eq!(entry.verify.scheme, Scheme::Stripe { tolerance: 300 });
    assert_eq!(format!("{:?}", entry.verify.secret), "env:STRIPE_WHSEC");
}

#[test]
fn mistakes_name_file_entry_field_and_position() {
    // an unknown field, in each format
    assert_eq!(
        refused(
            "stripe:\n  verify: {scheme: stripe, secret: s}\n  execution: a\n  kind_from: t\n  kinds: {x: X}\n  dedup: id\n",
            Format::Yaml
        ),
        "hooks file hooks.x, entry \"stripe\", field dedup, at 6:3: unknown field `dedup`, expected one of `verify`, `dedupe`, `execution`, `kind_from`, `kinds`, `data`, `create`, `machine`"
    );
    let json =
        "{\"stripe\": {\"verify\": {\"scheme\": \"stripe\", \"secret\": \"s\", \"tolerence\": 5}}}";
    let e = refused(json, Format::Json);
    assert!(
        e.starts_with("hooks file hooks.x, entry \"stripe\", field verify.tolerence, at 1:69"),
        "{e}"
    );
    assert!(e.contains("unknown field `tolerence`"), "{e}");
    let toml = "[stripe]\nverify = {scheme = \"stripe\", secret = \"s\"}\nexecution = \"a\"\nkind_from = \"t\"\nkinds = {x = \"X\"}\nextra = 1\n";
    let e = refused(toml, Format::Toml);
    assert!(
        e.starts_with(
            "hooks file hooks.x, entry \"stripe\", field extra, at 6:1: unknown field `extra`"
        ),
        "{e}"
    );

    // a wrong type names the field
    let e = refused(
        "stripe:\n  verify: {scheme: stripe, secret: s, tolerance: soon}\n  execution: a\n  kind_from: t\n  kinds: {x: X}\n",
        Format::Yaml,
    );
    assert!(
        e.starts_with("hooks file hooks.x, entry \"stripe\", field verify.tolerance, at 2:"),
        "{e}"
    );

    // a missing field
    let e = refused(
        "stripe:\n  verify: {scheme: stripe, secret: s}\n  kind_from: t\n  kinds: {x: X}\n",
        Format::Yaml,
    );
    assert!(
        e.contains("entry \"stripe\"") && e.contains("missing field `execution`"),
        "{e}"
    );

    // a JMESPath that does not compile, at its line
    let e = refused(
        "stripe:\n  verify: {scheme: stripe, secret: s}\n  execution: \"data.[\"\n  kind_from: t\n  kinds: {x: X}\n",
        Format::Yaml,
    );
    assert!(
        e.starts_with("hooks file hooks.x, entry \"stripe\", field execution, at 2:3"),
        "{e}"
    );
    assert!(e.contains("is not a JMESPath expression"), "{e}");

    // scheme rules
    let verify = |v: &str| {
        refused(
            &format!("h:\n  verify: {v}\n  execution: a\n  kind_from: t\n  kinds: {{x: X}}\n"),
            Format::Yaml,
        )
    };
    assert!(verify("{scheme: paypal, secret: s}")
        .contains("unknown scheme \"paypal\" (one of stripe, github, hmac)"));
    assert!(verify("{scheme: stripe, secret: s, header: X-Sig}")
        .contains("`header` applies to the hmac scheme only, not stripe"));
    assert!(verify("{scheme: hmac, secret: s}").contains("the hmac scheme needs `header`"));
    assert!(
        verify("{scheme: hmac, secret: s, header: X, algorithm: md5}")
            .contains("unknown variant `md5`")
    );
    assert!(verify("{scheme: hmac, secret: s, header: X, tolerance: 5}")
        .contains("need `timestamp_header`"));
    assert!(
        verify("{scheme: github, secret: \"ssm:\"}").contains("secret: ssm: must name a parameter")
    );
    assert!(verify("{scheme: github, secret: \"\"}").contains("a secret cannot be empty"));
    let e = verify("{scheme: github, secret: s, tolerance: 5}");
    assert!(
        e.contains("entry \"h\", field verify") && e.contains("does not apply to github"),
        "{e}"
    );

    // mapping rules
    let entry = |extra: &str| {
        refused(
            &format!("h:\n  verify: {{scheme: github, secret: s}}\n  execution: a\n  kind_from: t\n{extra}"),
            Format::Yaml,
        )
    };
    assert!(entry("  kinds: {}\n").contains("`kinds` maps no provider event"));
    assert!(entry("  kinds: {x: {kind: X, extra: 1}}\n").contains("unknown field `extra`"));
    let e = entry("  kinds: {x: X}\n  create: {machine: m, on: [Y]}\n");
    assert!(e.contains("create.on: \"Y\" is no kind of `kinds`"), "{e}");

    // whole-file mistakes
    assert_eq!(
        refused("{}", Format::Json),
        "hooks file hooks.x: no hooks: the file has no entries"
    );
    let e = refused("[1]", Format::Json);
    assert!(
        e.starts_with("hooks file hooks.x, at 1:") && e.contains("invalid type: sequence"),
        "{e}"
    );
    let e = refused("{\"a\": 1}", Format::Json);
    assert!(
        e.starts_with("hooks file hooks.x, entry \"a\", at 1:7: invalid type: integer `1`"),
        "{e}"
    );
    let e = refused("{} x", Format::Json);
    assert_eq!(e, "hooks file hooks.x, at 1:4: trailing characters");
    let e = refused("a = [", Format::Toml);
    assert!(e.starts_with("hooks file hooks.x, at 1:"), "{e}");
}

#[test]
fn the_extension_tells_the_format() {
    let dir = std::env::temp_dir().join(format!("harel-hooks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ini = dir.join("hooks.ini");
    std::fs::write(&ini, "x").unwrap();
    let e = HooksFile::load(&ini).unwrap_err().to_string();
    assert!(
        e.ends_with("the extension must tell the format: .json, .toml, .yaml or .yml"),
        "{e}"
    );
    let missing = HooksFile::load(&dir.join("none.yaml"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("cannot read the file"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn kinds_are_checked_against_the_machine() {
    let source = "event PaymentSucceeded { payment_id: string }\nmachine payment {\n  initial Waiting\n  state Waiting {}\n  final Done success\n  final Failed failed\n  from Waiting to Done on PaymentSucceeded\n  from Waiting to Failed on PaymentFailed\n}\n";
    let definition =
        Arc::new(harel_lang::load_str(source, Some("payment"), "payment.stm").unwrap());
    let lookup = |name: &str| (name == "payment").then(|| definition.clone());
    let file = |kinds: &str, machine: &str| {
        HooksFile::parse(
            &format!("h:\n  verify: {{scheme: github, secret: s}}\n  execution: a\n  kind_from: t\n  kinds: {kinds}\n  {machine}\n"),
            Format::Yaml,
            "hooks.yaml",
        )
        .unwrap()
    };
    // declared, and only listened for
    file(
        "{a: PaymentSucceeded, b: PaymentFailed}",
        "machine: payment",
    )
    .check(&lookup)
    .unwrap();
    file("{a: PaymentSucceeded}", "create: {machine: payment}")
        .check(&lookup)
        .unwrap();
    assert_eq!(
        file("{a: PaymentSucceded}", "machine: payment").check(&lookup).unwrap_err().to_string(),
        "hooks file hooks.yaml, entry \"h\", field kinds.a: machine \"payment\" neither declares nor listens for \"PaymentSucceded\" (it knows PaymentFailed, PaymentSucceeded)"
    );
    assert_eq!(
        file("{a: X}", "create: {machine: shop}")
            .check(&lookup)
            .unwrap_err()
            .to_string(),
        "hooks file hooks.yaml, entry \"h\", field create.machine: no machine \"shop\""
    );
    // no machine named: nothing to check against
    file("{a: Anything}", "data: x").check(&lookup).unwrap();
}

/// Found by tests/fuzz.rs: serde_json gives column 0 for a value of the wrong type that opens
/// its line (before its first character); the place is 1-based, so it is column 1.
#[test]
fn a_json_mistake_at_a_line_start_is_at_column_one() {
    assert_eq!(
        refused("[1]", Format::Json),
        "hooks file hooks.x, at 1:1: invalid type: sequence, expected a map"
    );
    assert_eq!(
        refused("\n[\"stripe\"]", Format::Json),
        "hooks file hooks.x, at 2:1: invalid type: sequence, expected a map"
    );
}

/// Found by tests/fuzz.rs (and by the action map's before it): nesting past serde's limit is
/// refused before libyaml's scan, which is quadratic in the depth, in every format.
#[test]
fn nesting_past_the_limit_is_refused_with_the_place() {
    // `{` and 128 `[`: the last one opens level 129, at column 134
    let flow = format!("{{\"a\": {}", "[".repeat(128));
    // `a = ` and 129 `[`: the last one at column 133
    let toml = format!("a = {}", "[".repeat(129));
    for (format, text, column) in [
        (Format::Yaml, &flow, 134),
        (Format::Json, &flow, 134),
        (Format::Toml, &toml, 133),
    ] {
        assert_eq!(
            refused(text, format),
            format!("hooks file hooks.x, at 1:{column}: nested more than 128 levels deep"),
            "{format:?}"
        );
    }
}

/// Found by tests/fuzz.rs: libyaml's reader reports a control character by its byte offset,
/// with a location of 1:1 beside it; the place is where the character is.
#[test]
fn a_control_character_is_refused_where_it_is() {
    assert_eq!(
        refused("stripe:\n  verify: \u{e}\n", Format::Yaml),
        "hooks file hooks.x, at 2:11: control characters are not allowed"
    );
}

/// A provider named twice, or a provider event type mapped twice, would have kept the second
/// alone (serde's maps keep the last value): refused where the repeat is written.
#[test]
fn a_name_written_twice_is_refused_where_the_repeat_is() {
    let entry =
        "  verify: {scheme: stripe, secret: \"env:S\"}\n  execution: a\n  kind_from: type\n";
    let twice = format!("stripe:\n{entry}  kinds: {{x: X}}\nstripe:\n{entry}  kinds: {{y: Y}}\n");
    let said = refused(&twice, Format::Yaml);
    assert!(
        said.contains("duplicate key \"stripe\"") && said.contains("at 6:1:"),
        "{said}"
    );
    let kinds = format!("stripe:\n{entry}  kinds:\n    x: X\n    x: Y\n");
    let said = refused(&kinds, Format::Yaml);
    assert!(
        said.contains("duplicate key \"x\"") && said.contains("at 7:5:"),
        "{said}"
    );
    let json = r#"{"stripe": {"verify": {"scheme": "stripe", "secret": "env:S"},
  "execution": "a", "kind_from": "type",
  "kinds": {"x": "X", "x": "Y"}}}"#;
    let said = refused(json, Format::Json);
    assert!(
        said.contains("duplicate key \"x\"") && said.contains("at 3:25:"),
        "{said}"
    );
}
