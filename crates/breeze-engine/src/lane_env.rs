//! Each lane's own environment: its number and a range of ports no other lane uses, so that
//! two tasks whose tests start a dev server or a database at the same time never collide.
//!
//! Every role process of a task, its `worktree.setup` and its `[review] checks` get
//! `BREEZE_LANE` (the lane, from 1), `BREEZE_PORT_BASE` and `BREEZE_PORT_COUNT`: the ports
//! `BREEZE_PORT_BASE` to `BREEZE_PORT_BASE + BREEZE_PORT_COUNT - 1` are the lane's while the
//! task holds it. `land.verify` and the landing hooks run in the integration checkout:
//! `BREEZE_LANE=0`, the range just below lane 1's (so does the preflight's trial of
//! `worktree.setup`, in a checkout of its own). The landing queue verifies up to
//! `land.queue_depth` landings side by side, each in an integration checkout of its own:
//! the second is lane 4 (the first number above the lanes'), the third lane 5, …, each with
//! the range above the last lane's. A person's session opened with `breeze attach` gets its
//! task's lane's values.

use crate::config::Config;

/// The most lanes a run has (`run.max_workers`).
pub use crate::config::MAX_LANES;

/// The lane number of the integration checkout (`land.verify`, the landing hooks).
pub const INTEGRATION_LANE: u32 = 0;

/// The variables a lane's processes get, and their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneEnv {
    /// `BREEZE_LANE`: 1..=3, or [`INTEGRATION_LANE`].
    pub lane: u32,
    /// `BREEZE_PORT_BASE`: the lane's first port.
    pub port_base: u16,
    /// `BREEZE_PORT_COUNT`: how many ports from there are the lane's.
    pub port_count: u16,
}

impl LaneEnv {
    /// The names of the variables, as [`LaneEnv::vars`] sets them.
    pub const NAMES: [&'static str; 3] = ["BREEZE_LANE", "BREEZE_PORT_BASE", "BREEZE_PORT_COUNT"];

    /// Lane `lane` (from 1; [`INTEGRATION_LANE`] for the integration checkout) under
    /// `config`'s `run.port_base` and `run.ports_per_lane` (validated so that every range
    /// fits below port 65536).
    pub fn of(config: &Config, lane: u32) -> LaneEnv {
        let highest = MAX_LANES + config.land_queue_depth.saturating_sub(1);
        let offset = u32::from(config.ports_per_lane) * lane.min(highest);
        LaneEnv {
            lane,
            port_base: u16::try_from(u32::from(config.port_base) + offset).unwrap_or(u16::MAX),
            port_count: config.ports_per_lane,
        }
    }

    /// The integration checkout's.
    pub fn integration(config: &Config) -> LaneEnv {
        Self::of(config, INTEGRATION_LANE)
    }

    /// Integration checkout `slot`'s (from 0, up to `land.queue_depth - 1`): the first is
    /// [`LaneEnv::integration`], the others are numbered after the lanes.
    pub fn integration_slot(config: &Config, slot: usize) -> LaneEnv {
        match slot {
            0 => Self::integration(config),
            slot => Self::of(config, MAX_LANES + u32::try_from(slot).unwrap_or(u32::MAX)),
        }
    }

    /// `BREEZE_LANE`, `BREEZE_PORT_BASE`, `BREEZE_PORT_COUNT` with their values.
    pub fn vars(&self) -> Vec<(String, String)> {
        let [lane, base, count] = Self::NAMES.map(String::from);
        vec![
            (lane, self.lane.to_string()),
            (base, self.port_base.to_string()),
            (count, self.port_count.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integration_checkouts_of_the_landing_queue_get_lanes_and_ranges_of_their_own() {
        let mut config = Config::defaults();
        config.land_queue_depth = 3;
        let slots: Vec<LaneEnv> =
            (0..3).map(|slot| LaneEnv::integration_slot(&config, slot)).collect();
        let lanes: Vec<u32> = slots.iter().map(|env| env.lane).collect();
        assert_eq!(lanes, [0, MAX_LANES + 1, MAX_LANES + 2]);
        let last_lane = LaneEnv::of(&config, MAX_LANES);
        let last_lane_end = u32::from(last_lane.port_base) + u32::from(last_lane.port_count);
        assert_eq!(u32::from(slots[1].port_base), last_lane_end);
        assert_eq!(slots[2].port_base, slots[1].port_base + config.ports_per_lane);
    }

    #[test]
    fn the_ranges_of_the_integration_checkouts_and_the_lanes_never_overlap() {
        let config = Config::defaults();
        let highest = MAX_LANES + config.land_queue_depth - 1;
        let ranges: Vec<(u32, u32)> = (0..=highest)
            .map(|lane| {
                let env = LaneEnv::of(&config, lane);
                let start = u32::from(env.port_base);
                (start, start + u32::from(env.port_count))
            })
            .collect();
        for pair in ranges.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "{ranges:?}");
        }
        // Above the common development ports, below the kernel's ephemeral ports.
        assert!(ranges[0].0 >= 10_000 && ranges[highest as usize].1 <= 32_768, "{ranges:?}");
        assert_eq!(LaneEnv::integration(&config).lane, INTEGRATION_LANE);
    }

    #[test]
    fn the_variables_carry_the_lane_and_its_range() {
        let config = Config::parse("[run]\nport_base = 30000\nports_per_lane = 5\n", "b.toml")
            .expect("valid");
        let vars = LaneEnv::of(&config, 2).vars();
        let value = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(value("BREEZE_LANE"), Some("2"));
        assert_eq!(value("BREEZE_PORT_BASE"), Some("30010"));
        assert_eq!(value("BREEZE_PORT_COUNT"), Some("5"));
    }

    #[test]
    fn a_port_range_that_does_not_fit_is_a_config_error() {
        let err = Config::parse("[run]\nport_base = 65500\n", "b.toml").unwrap_err().to_string();
        // The integration checkout, three lanes and two more integration checkouts (the
        // default `land.queue_depth` of 3): six ranges of ten.
        assert!(err.contains("`run.port_base` is 65500") && err.contains("60 ports"), "{err}");
        let err = Config::parse("[run]\nport_base = 80\n", "b.toml").unwrap_err().to_string();
        assert!(err.contains("`run.port_base` is 80"), "{err}");
        let err = Config::parse("[run]\nports_per_lane = 0\n", "b.toml").unwrap_err().to_string();
        assert!(err.contains("`run.ports_per_lane` is 0"), "{err}");
    }
}
