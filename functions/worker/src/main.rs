//! The worker function's own binary (`cargo lambda watch`, the tests); `sam build` deploys the
//! one binary of every function, `harel-bootstrap`, which runs the same [`harel_worker::run`].

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    harel_worker::run().await
}
