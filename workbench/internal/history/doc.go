// Package history holds what records and replays a workbench's past:
// workbench_commit, workbench_find, workbench_restore (its commands, its
// digests and its abort), retiring commits, what a pin restore keeps
// current, and the change feed (ReadChanges), which is not a tool.
package history
