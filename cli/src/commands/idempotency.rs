//! `harel idempotency`: why was this message skipped? The key a payload gets, computed
//! exactly as the idempotency layer computes it, and the record stored under a key.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context as _;
use harel_idempotency::record::Status;
use harel_idempotency::{
    default_key_prefix, DataRecord, DynamoDbPersistenceLayer, HashFunction, IdempotencyConfig,
    KeyMaker,
};

#[derive(clap::Subcommand)]
pub enum IdempotencyCommand {
    /// Print the idempotency key of the JSON payload read from standard input
    Key(KeyArgs),
    /// Print the record stored under an idempotency key
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct KeyArgs {
    /// The event_key_jmespath: what part of the payload is hashed (default: all of it)
    #[arg(long)]
    pub jmespath: Option<String>,
    /// The key prefix (default: `$AWS_LAMBDA_FUNCTION_NAME.<handler>`, or `test-func.<handler>`)
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// The handler name in the default key prefix
    #[arg(long, default_value = "handler")]
    pub handler: String,
    /// The hash function, by its hashlib name
    #[arg(long = "hash", default_value = "md5", value_parser = parse_hash)]
    pub hash: HashFunction,
    /// Also print the payload validation hash for this payload_validation_jmespath
    #[arg(long)]
    pub validation: Option<String>,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The idempotency key (`<prefix>#<hash>`)
    pub key: String,
    /// The idempotency table
    #[arg(long)]
    pub table: String,
    /// The partition key attribute
    #[arg(long, default_value = "id")]
    pub key_attr: String,
    /// The sort key attribute, on tables with a composite key
    #[arg(long)]
    pub sort_key: Option<String>,
    /// The partition value on composite-key tables (default `idempotency#$AWS_LAMBDA_FUNCTION_NAME`)
    #[arg(long)]
    pub static_pk_value: Option<String>,
    #[arg(long, default_value = "expiration")]
    pub expiry_attr: String,
    #[arg(long, default_value = "in_progress_expiration")]
    pub in_progress_expiry_attr: String,
    #[arg(long, default_value = "status")]
    pub status_attr: String,
    #[arg(long, default_value = "data")]
    pub data_attr: String,
    #[arg(long, default_value = "validation")]
    pub validation_key_attr: String,
}

fn parse_hash(name: &str) -> Result<HashFunction, String> {
    name.parse()
        .map_err(|e: harel_idempotency::hashing::UnsupportedHash| e.to_string())
}

pub async fn execute(cmd: IdempotencyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        IdempotencyCommand::Key(args) => key(args),
        IdempotencyCommand::Show(args) => show(args).await,
    }
}

fn key(args: KeyArgs) -> anyhow::Result<ExitCode> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading the payload from standard input")?;
    let payload: serde_json::Value =
        serde_json::from_str(&text).context("the payload on standard input is not JSON")?;
    let config = IdempotencyConfig {
        event_key_jmespath: args.jmespath.clone().unwrap_or_default(),
        payload_validation_jmespath: args.validation.clone().unwrap_or_default(),
        hash_function: args.hash,
        ..IdempotencyConfig::default()
    };
    let prefix = args
        .key_prefix
        .unwrap_or_else(|| default_key_prefix(&args.handler));
    let keys = KeyMaker::new(&config, prefix)?;
    let Some(key) = keys.idempotency_key(&payload)? else {
        eprintln!(
            "no idempotency key: the expression {:?} selects nothing in this payload, so the layer runs the handler without idempotency (or fails, with raise_on_no_idempotency_key)",
            keys.event_key_jmespath()
        );
        return Ok(ExitCode::FAILURE);
    };
    println!("{key}");
    if args.validation.is_some() {
        println!("validation {}", keys.payload_hash(&payload)?);
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let sdk = aws_config::load_from_env().await;
    let mut store = DynamoDbPersistenceLayer::new(aws_sdk_dynamodb::Client::new(&sdk), &args.table)
        .with_key_attr(&args.key_attr)
        .with_expiry_attr(&args.expiry_attr)
        .with_in_progress_expiry_attr(&args.in_progress_expiry_attr)
        .with_status_attr(&args.status_attr)
        .with_data_attr(&args.data_attr)
        .with_validation_key_attr(&args.validation_key_attr);
    if let Some(sk) = &args.sort_key {
        store = store.with_sort_key_attr(sk);
    }
    if let Some(pk) = &args.static_pk_value {
        store = store.with_static_pk_value(pk);
    }
    store.check()?;
    let record = store
        .get_record(&args.key)
        .await
        .with_context(|| format!("reading {} from table {}", args.key, args.table))?;
    let Some(record) = record else {
        anyhow::bail!(
            "no idempotency record for {} in table {}",
            args.key,
            args.table
        );
    };
    print!("{}", describe(&record));
    Ok(ExitCode::SUCCESS)
}

/// The record as an operator reads it: status, expiries as UTC dates, the stored result.
fn describe(record: &DataRecord) -> String {
    let status = match record.status() {
        Ok(Status::Expired) => format!("{} (expired)", record.raw_status),
        Ok(_) => record.raw_status.clone(),
        Err(e) => format!("{} ({e})", record.raw_status),
    };
    let mut out = format!("key:                    {}\n", record.idempotency_key);
    out.push_str(&format!("status:                 {status}\n"));
    if let Some(secs) = record.expiry_timestamp {
        out.push_str(&format!(
            "expiration:             {} ({secs})\n",
            utc_date(secs.saturating_mul(1000))
        ));
    }
    match record.in_progress_expiry_timestamp {
        Some(ms) => out.push_str(&format!(
            "in_progress_expiration: {} ({ms})\n",
            utc_date(ms)
        )),
        None => out.push_str("in_progress_expiration: none (no Lambda deadline was recorded)\n"),
    }
    if !record.payload_hash.is_empty() {
        out.push_str(&format!(
            "validation:             {}\n",
            record.payload_hash
        ));
    }
    let data = match record.response_json() {
        Ok(Some(v)) => {
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| record.response_data.clone())
        }
        Ok(None) => "none".to_owned(),
        Err(_) => format!("{} (not JSON)", record.response_data),
    };
    out.push_str(&format!("data:                   {data}\n"));
    out
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for epoch milliseconds (civil-from-days, proleptic Gregorian).
fn utc_date(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (h, m, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_date(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc_date(1_764_466_478_000), "2025-11-30T01:34:38.000Z");
    }

    #[test]
    fn describes_a_record() {
        let mut record = DataRecord::new("p#abc", "COMPLETED");
        record.expiry_timestamp = Some(4_102_444_800);
        record.response_data = "{\"a\": 1}".into();
        let text = describe(&record);
        assert!(
            text.contains("status:                 COMPLETED\n"),
            "{text}"
        );
        assert!(
            text.contains("2100-01-01T00:00:00.000Z (4102444800)"),
            "{text}"
        );
        assert!(text.contains("\"a\": 1"), "{text}");
    }
}
