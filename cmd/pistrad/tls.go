package main

import (
	"errors"
	"flag"
	"log/slog"

	"github.com/pistra/pistra/runtime/certs"
	"github.com/pistra/pistra/runtime/server"
)

// tlsFlags are the certificate files of pistrad's own listeners.
type tlsFlags struct {
	cert, key           string
	adminCert, adminKey string
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", "", "serve the public listener over TLS (and HTTP/2) with this PEM certificate chain `FILE`; re-read on SIGHUP")
	fs.StringVar(&f.key, "tls-key", "", "the PEM private key `FILE` of -tls-cert")
	fs.StringVar(&f.adminCert, "admin-tls-cert", "",
		"serve the admin listener over TLS with this PEM certificate `FILE` (default: -tls-cert's, when given); re-read on SIGHUP")
	fs.StringVar(&f.adminKey, "admin-tls-key", "", "the PEM private key `FILE` of -admin-tls-cert")
}

// load reads the pairs and sets the listeners' TLS configurations in o. It
// returns the pairs SIGHUP re-reads, each once.
func (f *tlsFlags) load(o *server.Options) ([]*certs.File, error) {
	public, err := pair("-tls-cert", "-tls-key", f.cert, f.key)
	if err != nil {
		return nil, err
	}
	admin, err := pair("-admin-tls-cert", "-admin-tls-key", f.adminCert, f.adminKey)
	if err != nil {
		return nil, err
	}
	var files []*certs.File
	if public != nil {
		o.PublicTLS, o.AdminTLS = public.Config(), public.Config()
		files = append(files, public)
	}
	if admin != nil {
		o.AdminTLS = admin.Config()
		files = append(files, admin)
	}
	return files, nil
}

// pair loads one certificate and key, both given or neither.
func pair(certFlag, keyFlag, cert, key string) (*certs.File, error) {
	switch {
	case cert == "" && key == "":
		return nil, nil
	case cert == "" || key == "":
		return nil, errors.New(certFlag + " and " + keyFlag + " go together: give both or neither")
	}
	return certs.Load(cert, key)
}

// reloadCerts re-reads every pair; one that does not load is logged and
// the certificate it had keeps serving.
func reloadCerts(files []*certs.File, log *slog.Logger) {
	for _, f := range files {
		if err := f.Reload(); err != nil {
			log.Error("tls certificate reload refused; the old certificate keeps serving", "error", err)
			continue
		}
		log.Info("tls certificate reloaded", f.Describe()...)
	}
}
