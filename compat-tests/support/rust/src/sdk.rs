//! The SDK test client's configuration, built in one place: [`crate::client_for`] is it as is; a
//! test that needs more (an interceptor, no retries, other credentials) starts from
//! [`client_config`] and adds to it. [`crate::s3_client_for`] shares the [`credentials`].

use aws_sdk_dynamodb::config::{BehaviorVersion, Builder, Credentials, Region};

/// The configuration of a plain SDK client for `endpoint`: test credentials (neither server
/// checks signatures), region `us-east-1`, the SDK's default retries.
pub fn client_config(endpoint: &str) -> Builder {
    aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::v2026_01_12())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .endpoint_url(endpoint)
}

/// The test credentials of every SDK client of the tests (DynamoDB and S3 alike).
pub fn credentials() -> Credentials {
    Credentials::new("test", "test", None, None, "ddblock-tests")
}
