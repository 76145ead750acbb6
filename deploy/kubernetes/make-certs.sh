#!/bin/sh
# Makes the certificates of the extender's mutual TLS (docs/kubernetes.md
# "Authentication") with the openssl command:
#
#   deploy/kubernetes/make-certs.sh DIR [NAME...]
#
#   DIR/ca.crt, DIR/ca.key               a CA of their own (keep ca.key offline)
#   DIR/extender.crt, DIR/extender.key   the extender's server certificate, for the
#                                        DNS names or IP addresses NAME (default: the
#                                        Service's names, migsched-extender.migsched-system.svc...)
#   DIR/scheduler.crt, DIR/scheduler.key kube-scheduler's client certificate (CN migsched-scheduler)
#
# Then, in a cluster (the manifests mount these Secrets at /etc/migsched-tls):
#   kubectl -n migsched-system create secret generic migsched-extender-tls \
#     --from-file=tls.crt=DIR/extender.crt --from-file=tls.key=DIR/extender.key \
#     --from-file=ca.crt=DIR/ca.crt
#   kubectl -n migsched-system create secret generic migsched-scheduler-tls \
#     --from-file=tls.crt=DIR/scheduler.crt --from-file=tls.key=DIR/scheduler.key \
#     --from-file=ca.crt=DIR/ca.crt
# Keys are P-256; certificates last DAYS days ($MIGSCHED_CERT_DAYS, default 365).
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [NAME...]  (NAME: a DNS name or an IP address of the extender)" >&2
  exit 2
fi
dir=$1
shift
[ $# -gt 0 ] || set -- migsched-extender.migsched-system.svc \
  migsched-extender.migsched-system.svc.cluster.local migsched-extender.migsched-system
days=${MIGSCHED_CERT_DAYS:-365}
command -v openssl >/dev/null || { echo "$0: the openssl command is needed" >&2; exit 1; }
mkdir -p "$dir"
umask 077
san=""
for n in "$@"; do
  case $n in
    *[!0-9.]*) entry="DNS:$n" ;;  # a name (IPv6 addresses are names here: give them as IP: below)
    *) entry="IP:$n" ;;
  esac
  san="${san:+$san,}$entry"
done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -subj /CN=migsched-ca -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
sign() {  # NAME CN EXTENSIONS
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
    -keyout "$dir/$1.key" -out "$dir/$1.csr" 2>/dev/null
  printf '%s\n' "$3" >"$dir/$1.ext"
  openssl x509 -req -days "$days" -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -extfile "$dir/$1.ext" -out "$dir/$1.crt" 2>/dev/null
  rm -f "$dir/$1.csr" "$dir/$1.ext"
}
sign extender migsched-extender "subjectAltName=$san
extendedKeyUsage=serverAuth"
sign scheduler migsched-scheduler "extendedKeyUsage=clientAuth"
rm -f "$dir/ca.srl"
echo "certificates in $dir: ca.crt, extender.crt/.key ($san), scheduler.crt/.key"
