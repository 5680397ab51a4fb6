//! The api function's own binary (`cargo lambda watch`, the tests); `sam build` deploys the
//! one binary of every function, `harel-bootstrap`, which runs the same [`harel_api_function::run`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    harel_api_function::run().await
}
