//! `harel show ID --store dynamodb --table-prefix P`: print a stored Execution document
//! exactly as it is stored (the JSON harel Python reads and writes).

use std::process::ExitCode;

use harel_dynamodb::DynamoDbStore;

/// Where executions live: the choice `show` and `run` share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// In this process only: nothing outlives the command.
    Memory,
    /// harel's DynamoDB tables (endpoint and region from the SDK's standard configuration,
    /// including AWS_ENDPOINT_URL).
    Dynamodb,
}

#[derive(Clone, Debug, clap::Args)]
pub struct StoreArgs {
    /// The execution store
    #[arg(long, value_enum, default_value = "memory")]
    pub store: StoreKind,
    /// The prefix of the DynamoDB tables ({prefix}_executions, ...), as harel's `prefix`;
    /// read from HAREL_TABLE_PREFIX, like the functions, when not given
    #[arg(long, env = "HAREL_TABLE_PREFIX", default_value = "harel")]
    pub table_prefix: String,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The execution id
    pub id: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn execute(args: ShowArgs) -> anyhow::Result<ExitCode> {
    match args.store.store {
        StoreKind::Memory => anyhow::bail!(
            "the in-memory store keeps nothing between commands: show an execution from a durable store (--store dynamodb --table-prefix P)"
        ),
        StoreKind::Dynamodb => {
            let store = DynamoDbStore::from_env(&args.store.table_prefix).await?;
            match store.load_raw(&args.id).await {
                Ok(Some(json)) => {
                    println!("{json}");
                    Ok(ExitCode::SUCCESS)
                }
                Ok(None) => anyhow::bail!(
                    "no execution {:?} in table {}",
                    args.id,
                    store.tables().executions()
                ),
                Err(e) => anyhow::bail!(
                    "reading execution {:?} from table {}: {e}",
                    args.id,
                    store.tables().executions()
                ),
            }
        }
    }
}
