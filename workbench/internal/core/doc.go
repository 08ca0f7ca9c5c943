// Package core is what every Workbench feature shares: the Service's
// state (the engine store, the body store, the deployment root, the
// request ids), the one tool registry and the registry of engine command
// handlers, input decoding and the schema validator, the contract's
// errors and the canonical printing of results, ids and paths, views of
// one pinned snapshot, cursors, the workspace rows and the resolution of
// snapshots that reads at a snapshot need, and body reads.
//
// A feature package (files, reads, query, history, snapshots,
// maintenance) registers its tools from init with RegisterTool and takes
// the *Service as an argument; nothing here imports a feature.
package core
