//! The relay function's own binary (`cargo lambda watch`, the tests); `sam build` deploys the
//! one binary of every function, `harel-bootstrap`, which runs the same [`harel_relay::run`].

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    harel_relay::run().await
}
