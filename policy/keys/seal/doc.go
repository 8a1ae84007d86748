// Package seal keeps workspaces' provider keys secret at rest and in
// memory: Secret, a key type that never prints in any formatter, encoder or
// logger; Sealer, which encrypts a key with AES-256-GCM bound to its
// workspace and provider (a row copied to another workspace does not open);
// and LoadKey, which finds the sealing key in the environment or, on the
// embedded default, in a file of the data directory made once.
package seal
