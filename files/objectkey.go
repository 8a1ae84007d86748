package files

// ObjectPrefix is the part of the bucket the upload service owns: every
// object it stores lies under it, and anything else in the bucket is not
// its own. The sweeper lists only this prefix, so the layout is known here
// alone.
const ObjectPrefix = "ws/"

// ObjectKey is where the upload service stores file fileID of workspace
// workspaceID: "ws/<workspace>/<file>". Grouping by workspace keeps one
// workspace's objects together for listing and removal by hand.
func ObjectKey(workspaceID, fileID string) string {
	return ObjectPrefix + workspaceID + "/" + fileID
}
