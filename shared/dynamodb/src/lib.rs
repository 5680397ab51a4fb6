//! The DynamoDB execution store.
