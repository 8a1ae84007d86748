package gateway

import (
	"net/url"
	"strconv"
)

// readQuery reads a list's query the one strict way: each parameter at most
// once, each one the route knows, each read by its reader; anything else is
// a 400 naming the parameter.
func readQuery(query url.Values, readers map[string]func(string) error) error {
	for name, vs := range query {
		if len(vs) != 1 {
			return badRequest(map[string]any{name: "must be given once"})
		}
		read, ok := readers[name]
		if !ok {
			return badRequest(map[string]any{name: "unknown parameter"})
		}
		if err := read(vs[0]); err != nil {
			return err
		}
	}
	return nil
}

// intParam reads an integer from lo to hi into dst.
func intParam(name string, dst *int, lo, hi int) func(string) error {
	return func(v string) error {
		n, ok := queryInt(v, lo, hi)
		if !ok {
			return badRequest(map[string]any{name: "must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)})
		}
		*dst = n
		return nil
	}
}

// boolParam reads "true" or "false" into dst.
func boolParam(name string, dst *bool) func(string) error {
	return func(v string) error {
		if v != "true" && v != "false" {
			return badRequest(map[string]any{name: "must be true or false"})
		}
		*dst = v == "true"
		return nil
	}
}

// workspaceParam reads a workspace id or slug into dst.
func workspaceParam(dst *string) func(string) error {
	return func(v string) error {
		if v == "" || len(v) > 64 {
			return badRequest(map[string]any{"workspace_id": "must be a workspace id or slug"})
		}
		*dst = v
		return nil
	}
}

// queryInt reads s as an integer from lo to hi, the one strict way every
// list of the API shares: decimal digits only. "+5", "5.0", " 5" and "0x5"
// are not integers here, whatever strconv would make of them.
func queryInt(s string, lo, hi int) (int, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}
