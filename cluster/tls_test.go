package cluster

import (
	"crypto/tls"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

func tlsFiles(dir, name string) TLSFiles {
	return TLSFiles{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}
}

// tlsHandshake serves one TLS connection with server and dials it with
// client over real loopback TCP; it returns the dial and the serve errors.
func tlsHandshake(t *testing.T, server, client *tls.Config) (dialErr, serveErr error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = c.Write([]byte("ok"))
		}
		done <- err
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err == nil {
		_, err = io.ReadFull(c, make([]byte, 2))
		c.Close()
	}
	return err, <-done
}

func TestTLSMutualAuth(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if err := GenerateDevCerts(dir, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := GenerateDevCerts(other, "mallory"); err != nil {
		t.Fatal(err)
	}
	sa, _, err := TLSConfigs(tlsFiles(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	_, cb, err := TLSConfigs(tlsFiles(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if d, s := tlsHandshake(t, sa, cb); d != nil || s != nil {
		t.Fatalf("nodes of one CA: dial %v, serve %v", d, s)
	}
	sm, cm, err := TLSConfigs(tlsFiles(other, "mallory"))
	if err != nil {
		t.Fatal(err)
	}
	if _, s := tlsHandshake(t, sa, cm); s == nil {
		t.Fatal("server accepted a client certificate of another CA")
	}
	if d, _ := tlsHandshake(t, sm, cb); d == nil {
		t.Fatal("client accepted a server certificate of another CA")
	}
	// A client without a certificate is refused.
	if _, s := tlsHandshake(t, sa, &tls.Config{InsecureSkipVerify: true}); s == nil {
		t.Fatal("server accepted a client without a certificate")
	}
}

func TestTLSBadFiles(t *testing.T) {
	dir := t.TempDir()
	if err := GenerateDevCerts(dir, "a"); err != nil {
		t.Fatal(err)
	}
	good := tlsFiles(dir, "a")
	for name, f := range map[string]TLSFiles{
		"missing key":  {Cert: good.Cert, CA: good.CA},
		"no such file": {Cert: good.Cert, Key: good.Key, CA: filepath.Join(dir, "nope.pem")},
		"CA not PEM":   {Cert: good.Cert, Key: good.Key, CA: good.Key + "x"},
		"key mismatch": {Cert: good.Cert, Key: filepath.Join(dir, "ca-key.pem"), CA: good.CA},
	} {
		if _, _, err := TLSConfigs(f); !errors.Is(err, ErrTLS) {
			t.Errorf("%s: %v, want ErrTLS", name, err)
		}
	}
	if _, err := RemoteTLSOptions(good); err != nil {
		t.Fatal(err)
	}
}
