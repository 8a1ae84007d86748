package client

import "context"

type requestIDKey struct{}

// WithRequestID returns a context whose calls send id as X-Request-Id. The
// gateway keeps an id of up to 128 letters, digits and "-_.:" and logs it
// with the request; it makes up its own for any other.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the id WithRequestID put in ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
