package limits

// Every limit key is built here. A key names one bucket of a shared
// limiter, and in Redis it outlives a release: two limits that built the
// same key by accident would share a bucket, and a format changed in one
// place but not another would split one.

// Class is a group of API routes whose requests share one limit per API
// key.
type Class uint8

const (
	// ClassDefault holds every authenticated route without a class of its
	// own (model lookups, workspaces).
	ClassDefault Class = iota
	// ClassFiles holds uploads, which also pass UploadAdmission.
	ClassFiles
	// ClassUsage holds usage reports, which the other gateway components
	// send for a whole fleet with one service key: a class sized for that,
	// not for a person's calls.
	ClassUsage
)

// Names of the limits, as a denial reports them to the client
// (LimitedError.Reason).
const (
	LimitRequests        = "rate"
	LimitUploads         = "files"
	LimitUploadBytes     = "upload_bytes"
	LimitUploadsInFlight = "uploads_in_flight"
)

// RequestsKey is the key of the request limit of class c for one API key.
func RequestsKey(c Class, keyID string) string {
	switch c {
	case ClassFiles:
		return "files:key:" + keyID
	case ClassUsage:
		return "usage:key:" + keyID
	}
	return "default:key:" + keyID
}

// AuthFailuresKey is the key of the failed authentications of one client
// address.
func AuthFailuresKey(clientAddr string) string { return "authfail:addr:" + clientAddr }

// UploadsKey is the key of the upload rate of one workspace.
func UploadsKey(workspaceID string) string { return "files:ws:" + workspaceID }

// UploadBytesKey is the key of the upload byte budget of one workspace.
func UploadBytesKey(workspaceID string) string { return "upload_bytes:ws:" + workspaceID }

// UploadsInFlightKey is the InFlight key of the uploads of one API key.
func UploadsInFlightKey(keyID string) string { return "uploads:key:" + keyID }
