//! The NATS store in a build without it (the default: one machine, a smaller binary that
//! every idle worker maps). An address is still checked; opening or making a team on a server
//! says how to get a build that has the store (`--features nats`).

use std::path::PathBuf;

#[path = "nats/url.rs"]
mod url;

pub use url::ServerUrl;

use crate::domain::{Name, TeamConfig};
use crate::error::{Error, Result};

/// Never made in this build.
pub struct NatsStore {
    never: std::convert::Infallible,
}

/// What `create` found (never anything in this build).
pub enum Created {
    Made(Box<NatsStore>),
    Taken,
}

fn not_built() -> Error {
    Error::failed(
        "this teamctl was built without the NATS store; build it with `cargo install --path . --features nats` (docs/SCALE.md)",
    )
}

impl NatsStore {
    pub fn shared(self) -> super::SharedStore {
        match self.never {}
    }

    pub fn open(_: &ServerUrl, _: &Name, _: PathBuf) -> Result<NatsStore> {
        Err(not_built())
    }

    pub fn team_names(_: &ServerUrl) -> Vec<Name> {
        Vec::new()
    }

    pub fn exists_at(_: &ServerUrl, _: &Name) -> Result<bool> {
        Err(not_built())
    }

    pub fn create(_: &ServerUrl, _: &TeamConfig, _: PathBuf) -> Result<Created> {
        Err(not_built())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_nats_says_how_to_get_one() {
        let url = ServerUrl::parse("nats://alice:pw@127.0.0.1:4222").unwrap();
        let team = Name::parse("alpha").unwrap();
        let err = NatsStore::open(&url, &team, PathBuf::new()).err().unwrap();
        assert!(err.to_string().contains("--features nats"), "{err}");
        assert!(ServerUrl::parse("http://h:1").is_err());
    }
}
