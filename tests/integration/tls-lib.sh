# Helpers for the secured endpoint's tests (t062x), sourced after lib.sh.
#
# make_certs: in $T_DIR, a test CA (ca.crt), the agent's certificate for
# localhost and 127.0.0.1 (server.crt, server.key), a client certificate
# signed by the CA (client.crt, client.key) and one from another CA
# (rogue.crt, rogue.key, rogue-ca.crt).
make_certs() {
	need openssl
	(
		cd "$T_DIR"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt \
			-days 2 -subj "/CN=gpuwatch test CA" >openssl.log 2>&1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue-ca.key \
			-out rogue-ca.crt -days 2 -subj "/CN=rogue CA" >>openssl.log 2>&1
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		for who in server:ca client:ca rogue:rogue-ca; do
			name="${who%%:*}" ca="${who#*:}"
			ext=client.ext
			[ "$name" = server ] && ext=server.ext
			openssl req -newkey rsa:2048 -nodes -keyout "$name.key" \
				-out "$name.csr" -subj "/CN=$name" >>openssl.log 2>&1
			openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" \
				-CAcreateserial -out "$name.crt" -days 2 -extfile "$ext" \
				>>openssl.log 2>&1
		done
	) || fail "openssl: $(cat "$T_DIR/openssl.log")"
}

# bcrypt_hash PASSWORD: a bcrypt hash ($2b$, cost 4: fast tests).
bcrypt_hash() {
	python3 -W ignore -c 'import crypt, sys
print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$1"
}

# http_code ARGS...: curl's status code for a request (000: no HTTP
# answer, e.g. a refused handshake).
http_code() {
	curl -sS -o /dev/null -w '%{http_code}' "$@" 2>/dev/null || true
}
