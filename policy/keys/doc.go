// Package keys holds the gateway's API keys: their roles, their format
// (a recognisable prefix, a public id and a secret stored only as its
// SHA-256), and the Authenticator that turns a presented token into a key
// with a short-lived cache in front of the KeyStore. Provider keys are
// sealed by policy/keys/seal.
//
// It speaks no HTTP and no SQL: the edge reads the token from the request
// and maps the errors here to statuses; sqlstore implements KeyStore.
package keys
