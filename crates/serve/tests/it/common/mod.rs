//! A server over its own loopback simulator: the tests start the simulator, hand the server
//! its URL and stop both, as the binary does.
#![allow(dead_code, clippy::unwrap_used)]

use std::ops::Deref;

use ticktrade_serve::{ServeConfig, ServeHandle, UpstreamSource};
use ticktrade_sim::{SimConfig, SimHandle};

/// A running server and the simulator it reads.
pub struct Served {
    pub serve: ServeHandle,
    pub sim: SimHandle,
}

impl Deref for Served {
    type Target = ServeHandle;

    fn deref(&self) -> &ServeHandle {
        &self.serve
    }
}

impl Served {
    pub fn sim(&self) -> &SimHandle {
        &self.sim
    }

    pub async fn shutdown(self) {
        self.serve.shutdown().await;
        self.sim.shutdown().await;
    }
}

/// Starts the simulator with `sim`, then a server with `config` reading it.
pub async fn spawn(sim: SimConfig, config: ServeConfig) -> Served {
    let sim = ticktrade_sim::spawn_loopback(sim).await.unwrap();
    let serve =
        ticktrade_serve::spawn(ServeConfig { upstream: UpstreamSource::Url(sim.ws_url()), ..config }).await.unwrap();
    Served { serve, sim }
}
