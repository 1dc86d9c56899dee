// Package control lets one streamsql process control the jobs of another on
// the same machine: a registry of running processes, a REST API per process
// with Flink's paths and JSON shapes, and a client for both.
//
// It owns:
//   - the registry: every streamsql process (shell or `run`) writes
//     <runtime dir>/<pid>.json while it runs and removes it on exit. The
//     runtime directory is $XDG_RUNTIME_DIR/streamsql, else
//     <os.TempDir()>/streamsql-<uid>; it must be a directory (not a symlink)
//     owned by the user with no group or other permissions, else the
//     registry refuses to use it. Readers ignore and delete entries whose
//     process is gone (or whose pid now belongs to another process: the
//     entry records the process's start time from /proc where available).
//     An entry holds the pid, the URL of the REST API and, when the API
//     requires a token, only the token's SHA-256: never the token itself.
//   - the REST server (Server): GET /jobs, GET /jobs/overview, GET /jobs/:id,
//     PATCH /jobs/:id (cancel), POST /jobs/:id/savepoints, POST
//     /jobs/:id/stop, GET /jobs/:id/savepoints/:request-id, GET
//     /jobs/:id/checkpoints. Errors are {"errors": ["..."]} with a 4xx/5xx
//     status, as in Flink.
//   - the client (Client, Discover, FindJob) used by `streamsql list`,
//     `savepoint`, `stop` and `cancel`.
//
// Security: the server binds to 127.0.0.1 by default. Binding to any
// address that is not loopback requires a token (rest.token, at least 16
// characters); with a token every request must carry "Authorization: Bearer
// <token>" (compared in constant time) or gets 401. Local verbs take the
// token from STREAMSQL_REST_TOKEN; the registry only lets them tell which
// processes need one. Entries are written with mode 0600 in a 0700
// directory. The token is never logged: Mask shows at most its first four
// characters.
//
// Invariants: a savepoint or stop started over REST keeps running when the
// request that started it ends; its result stays queryable until the
// server closes (the last 64 completed operations are kept), and Close
// waits briefly for clients to collect the result of a stop.
//
// It must not import the engine (session, exec, checkpoint...): the engine
// is reached only through the Engine interface, which session implements.
package control
