// Package cluster holds what makes several t2t processes one cluster:
// membership by hashicorp/memberlist gossip, node roles and metadata, and
// the protoactor-go ClusterProvider that feeds protoactor's cluster topology
// from that membership. (The Redis store lives in cluster/store.)
//
// # Nodes
//
// A node describes itself with a NodeMeta: a member ID fresh per process
// start (NewNodeID, or the actor system's ID under Provider), a name, its
// protoactor remote address, its roles (RoleCoordinator, RoleRollout,
// RoleLearner, RoleEngineer; ParseRoles reads "rollout,learner"), its
// rollout capacity, its version and the protoactor kinds it hosts. The
// metadata travels in memberlist's node meta, JSON behind a format byte,
// at most MaxMetaSize (512) bytes including 10 bytes kept for the leave
// flag; Encode refuses more with a *MetaTooLargeError.
//
// # Membership
//
//	cfg := cluster.DefaultConfig()          // or LocalConfig() for one host
//	cfg.Seeds = []string{"10.0.0.1:7946"}
//	m, err := cluster.Join(ctx, cfg, meta, logger)
//	defer m.Leave(5 * time.Second)
//	for ev := range m.Events() { ... }       // Joined, Left, Failed, Updated
//	snapshot := m.Members()                 // alive members, sorted by ID
//
// Join retries the seeds with backoff until one answers or the deadline
// passes (*JoinError). Events of different members arrive in the order
// gossip brings them, not in the order the members joined: two nodes that
// join one after the other through a seed may reach a third in either
// order. A graceful Leave is seen by the others as Left; a
// node that stops answering is seen as Failed after the failure-detection
// time of the profile (Tuning.DetectionTime: about 1.3s for three nodes on
// loopback with ProfileLocal, about 6.4s with ProfileLAN). A restarted node
// has a new ID, so it appears as a new member while its old ID is reported
// Left or Failed. Gossip can be encrypted (Config.SecretKey, AES 16/24/32
// bytes) and is stamped with Config.Label; nodes with another key or label
// cannot join.
//
// Nodes whose metadata does not decode, or whose metadata ID differs from
// their gossip name, are refused and counted (Stats.RejectedAlive); notices
// about nodes never admitted and user-level gossip messages are ignored and
// counted too. Nothing a peer sends can crash the node.
//
// # protoactor
//
// Provider implements protoactor-go's cluster.ClusterProvider: StartMember
// joins the gossip cluster publishing the remote address and kinds, then
// hands the alive members (Topology) to the cluster's
// MemberList.UpdateClusterTopology on every change; Shutdown(true) leaves
// gracefully. See Provider for what protoactor's Shutdown(false) omits.
//
// # Concurrency
//
// Membership and Provider methods are safe for concurrent use. Events is a
// bounded channel (Config.EventBuffer) meant for one reader: when the reader
// lags, events are dropped and counted (Stats.DroppedEvents) instead of
// stalling gossip, and Members always returns an exact snapshot; Watch gives
// any number of readers a coalescing "something changed" signal. The only
// goroutines are memberlist's and, under Provider, one that feeds the
// topology; Shutdown and Leave end them all. A Membership is single-use:
// after Shutdown, Join again (with a new ID).
//
// # Errors
//
// Sentinels ErrUnknownRole, ErrInvalidMeta, ErrMetaTooLarge, ErrBadMeta,
// ErrInvalidConfig, ErrJoin and ErrShutdown, matched with errors.Is; the
// typed errors *RoleError, *fielderr.Error (of NodeMeta or Config), *MetaTooLargeError and
// *JoinError carry the details (errors.As).
package cluster
