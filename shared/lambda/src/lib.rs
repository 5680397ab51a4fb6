//! The serverless runtime: configuration and the worker, relay and sweeper handlers.
