// Package snapshots holds the leased snapshots: workbench_snapshot,
// workbench_snapshot_renew, workbench_snapshot_retire and
// workbench_snapshot_list, the lease clock and the reaper (Reap). Reads at
// a snapshot resolve it through package core.
package snapshots
