// Package bench runs cairn's user-level scenarios and prints one table:
// what a Workbench tool call costs in requests, sequential rounds, bytes
// and time, measured as a user would meet it, through workbench.Service:
// its typed methods (PutFile) and Call.
//
// # The store under measurement
//
// Every scenario runs over one in-memory store (bucket/mem) behind
// bucket/latency (Config.RTT before every request and, with
// Config.WriteRate, GCS's limit of writes per second to one object), and
// every Service gets its own bucket/counting wrapper on top, so a row's
// requests and rounds are those of one replica. The latency wrapper can be
// bypassed: seeding a workbench of N files runs without it, and nothing
// seeded is counted. The latency wrapper is shared by all Services, as a
// bucket's write limit is.
//
// # Served runs
//
// With Config.Served the write scenarios (ServedScenarios) run as a
// deployment meets them: over HTTP to `cairn serve` processes (the
// bench's own binary, Config.Binary), whose bucket is a GCS emulator
// (`cairn fake-gcs`) in another process, reached through a proxy in the
// bench's process. The proxy waits Config.RTT before forwarding each
// request and answers 429 to a write of an object written less than
// 1/Config.WriteRate ago, as GCS does; the servers pace their head
// writes to that (--commit-interval). A row's requests, rounds and
// bytes are the proxy's, its CPU the servers', and its notes give the
// servers' resident memory. Seeding goes to the emulator directly, in
// process, and the seeding replica is closed before the servers start.
// The emulator keeps its objects in files under /dev/shm (or Config.Dir):
// its in-memory store scans every object to find one, and on disk its
// temporary files and syncs took most of a core.
//
// # The storage workload
//
// Storage, run only when named, is a deployment's own: a fresh `cairn
// serve` on a local-file bucket under Config.Dir, no latency, eight
// clients putting files of 2 KiB and committing after every 100. Its row
// gives the store at the end, the live graph (the store after two
// offline `cairn gc` sweeps at the least grace, once the server has
// left) and the server's resident memory. Config.StorageHold keeps the
// server running, idle, that much longer before it leaves, sampling the
// store every minute: the row then also gives what the store holds once
// the server's own background sweeps have had their time. It seeds
// nothing and leaves nothing behind.
//
// # Sizes and seeding
//
// For each size in Config.Files a fresh store is seeded with a workbench
// of that many small files: a directory of Config.DirEntries files (the
// one listed and grepped) and the rest in directories of 100. A Seeder
// does it; the default one calls workbench_put_file concurrently on the
// Service that the warm scenarios then use, so that Service has served
// every write (it is warm). Seeding is the slow part at large sizes: its
// time is reported, never counted in a row.
//
// # Rows
//
// A row is one scenario at one size. Measured rows are never mixed with
// extrapolated ones: Extrapolate adds rows fitted on the two largest
// measured sizes, marked "extrapolated" in their notes and in Row.Extrapolated.
//
// The package does not import testing; cmd/cairn links it.
package bench
