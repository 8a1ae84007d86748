package providers

import (
	"errors"
	"fmt"

	"github.com/aigateway/gateway/files"
)

// providerFile is a provider's file record as its list and metadata answers
// carry it.
type providerFile[F any] interface {
	*F
	info() (files.ProviderFileInfo, error)
}

// fileRecord is a provider's file record (OpenAI's File object, Anthropic's
// file metadata) with what a dialect says of it: which members it has and
// what they mean. How an answer made of records is read is the same for
// both dialects: records does it.
type fileRecord[F any] interface {
	providerFile[F]
	// read reads the record from r.
	read(r *jsonReader) error
	// uploaded is the record as the answer to an upload; an error when it
	// lacks what that answer must say.
	uploaded() (Uploaded, error)
}

// records reads a dialect's answers made of its file records F: an upload's
// or a stat's (one record), and a page of the file list. Safe for
// concurrent use.
type records[F any, P fileRecord[F]] struct {
	// noun is what the dialect calls one record, for errors.
	noun string
	// listObject is the value a list's "object" member must have (OpenAI's
	// "list"). Empty for a dialect whose lists have no such member: one sent
	// anyway is skipped like any unknown member.
	listObject string
	// pool keeps the slices pages are read into.
	pool recordPool[F]
}

// record reads an answer that is one record.
func (rs *records[F, P]) record(body []byte) (P, error) {
	f := P(new(F))
	if err := readJSON(body, f.read); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", rs.noun, err)
	}
	return f, nil
}

// info reads a stat's answer.
func (rs *records[F, P]) info(body []byte) (files.ProviderFileInfo, error) {
	f, err := rs.record(body)
	if err != nil {
		return files.ProviderFileInfo{}, err
	}
	return f.info()
}

// upload reads an upload's answer.
func (rs *records[F, P]) upload(body []byte) (Uploaded, error) {
	f, err := rs.record(body)
	if err != nil {
		return Uploaded{}, err
	}
	return f.uploaded()
}

// list reads a page of the file list, refusing it whole when one record
// does not describe a file.
func (rs *records[F, P]) list(body []byte) (files.ProviderPage, error) {
	l := fileList[F, P]{withObject: rs.listObject != "", data: rs.pool.get()}
	defer rs.pool.put(l.data)
	if err := readJSON(body, l.read); err != nil {
		return files.ProviderPage{}, fmt.Errorf("decoding file list: %w", err)
	}
	if l.object != rs.listObject || !l.hasData || !l.hasMoreSet {
		return files.ProviderPage{}, errors.New("answer is not a file list")
	}
	return pageOf[F, P](*l.data, l.hasMore)
}

// readJSON reads body, one JSON value and nothing after it, with read.
func readJSON(body []byte, read func(r *jsonReader) error) error {
	r := newJSONReader(body)
	if err := read(r); err != nil {
		return err
	}
	return r.end()
}

// fileList is a page of a provider's file list, as both send it:
// {"data":[record…],"has_more","first_id","last_id"}, and for OpenAI
// "object":"list" besides.
type fileList[F any, P fileRecord[F]] struct {
	withObject          bool // the dialect's lists have an object member
	object              string
	data                *[]F
	hasData             bool // data is there, and not null
	hasMore, hasMoreSet bool
}

// The names of fileList's members, for keys that match one but for case.
var (
	fileListNames           = []string{"data", "has_more"}
	fileListNamesWithObject = []string{"object", "data", "has_more"}
)

func (l *fileList[F, P]) read(r *jsonReader) error {
	names := fileListNames
	if l.withObject {
		names = fileListNamesWithObject
	}
	return members(r, l, names, (*fileList[F, P]).member)
}

func (l *fileList[F, P]) member(r *jsonReader, key string) (known bool, err error) {
	switch key {
	case "object":
		if !l.withObject {
			return false, nil
		}
		return true, r.setString(&l.object)
	case "data":
		l.hasData, err = elements(r, l.data, readRecord[F, P])
		return true, err
	case "has_more":
		return true, r.setBool(&l.hasMore, &l.hasMoreSet)
	case "first_id", "last_id":
		return true, r.skip()
	}
	return false, nil
}

func readRecord[F any, P fileRecord[F]](f *F, r *jsonReader) error { return P(f).read(r) }

// pageOf turns a decoded list answer into a page, refusing it whole when
// one entry cannot be read.
func pageOf[F any, P providerFile[F]](data []F, hasMore bool) (files.ProviderPage, error) {
	page := files.ProviderPage{Files: make([]files.ProviderFileInfo, len(data)), HasMore: hasMore}
	for i := range data {
		info, err := P(&data[i]).info()
		if err != nil {
			return files.ProviderPage{}, fmt.Errorf("file list entry %d: %w", i, err)
		}
		page.Files[i] = info
	}
	return page, nil
}
