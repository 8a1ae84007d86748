package files

import "errors"

// ErrProviderRejected: the provider refused a read or delete of its files as
// a bad request (a 4xx other than 401, 403, 404 and 429), or the adapter
// refused it for the provider because the provider cannot do what was asked
// (e.g. an order it does not offer). It is the caller's request that is
// wrong, not the workspace's key: the edge answers 400, with the provider's
// status in metadata and never its body.
var ErrProviderRejected = errors.New("provider rejected the request")
