//! The DynamoDB client: given by the caller, or built from the configuration once per process
//! (`aws.rs`).

use aws_sdk_dynamodb::Client;

use crate::aws::{sdk_config, PerProcess};
use crate::config::StoreConfig;
use crate::error::Result;

/// The client of a [`super::Table`]: given by the caller, or built lazily per process.
#[derive(Debug)]
pub(super) enum ClientCell {
    Fixed(Client),
    Lazy(PerProcess<Client>),
}

impl ClientCell {
    pub(super) fn fixed(client: Client) -> ClientCell {
        ClientCell::Fixed(client)
    }

    pub(super) fn lazy() -> ClientCell {
        ClientCell::Lazy(PerProcess::default())
    }

    pub(super) async fn get(&self, cfg: &StoreConfig) -> Result<Client> {
        match self {
            ClientCell::Fixed(c) => Ok(c.clone()),
            ClientCell::Lazy(cell) => {
                crate::aws::root_certificates(cfg)?;
                Ok(cell
                    .get_or_build(|| async {
                        Client::from_conf(
                            aws_sdk_dynamodb::config::Builder::from(&sdk_config(cfg).await).build(),
                        )
                    })
                    .await)
            }
        }
    }
}
