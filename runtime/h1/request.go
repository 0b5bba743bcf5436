package h1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// writeRequest writes req's head and body and flushes. Host, Content-Length
// and the connection-level headers are this client's to write; the caller's
// copies of them are ignored.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	for k, vs := range req.Header {
		if ownHeader(k) {
			continue
		}
		for _, v := range vs {
			if v == "" && k == "User-Agent" {
				continue // net/http's convention for "send none"
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("Content-Length: ")
	var num [20]byte
	bw.Write(strconv.AppendInt(num[:0], req.ContentLength, 10))
	bw.WriteString("\r\n\r\n")
	if req.Body != nil {
		n, err := io.Copy(bw, req.Body)
		req.Body.Close()
		if err == nil && n != req.ContentLength {
			err = fmt.Errorf("body is %d bytes, ContentLength says %d", n, req.ContentLength)
		}
		if err != nil {
			return fmt.Errorf("h1: request body: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("h1: writing request: %w", err)
	}
	return nil
}

func ownHeader(k string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade":
		return true
	}
	return false
}

// checkHeaders refuses names and values that would break the request line
// structure: a header value carrying CR or LF could smuggle a header in.
func checkHeaders(h http.Header) error {
	for k, vs := range h {
		if k == "" || !validText(k, false) {
			return fmt.Errorf("h1: invalid header name %q", k)
		}
		for _, v := range vs {
			if !validText(v, true) {
				return fmt.Errorf("h1: invalid value for header %q", k)
			}
		}
	}
	return nil
}

func validText(s string, value bool) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '\r' || b == '\n' || b == 0 || b == 0x7f:
			return false
		case !value && (b <= ' ' || b == ':'):
			return false
		}
	}
	return true
}
