#include "client/internal/test_server.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <set>

#include "common/check.h"
#include "common/mutex.h"

namespace draplane::client::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  DRAPLANE_CHECK(ext != nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* MakeCert(EVP_PKEY* key, const char* cn, const char* org, X509* issuer, EVP_PKEY* signer,
               long serial, bool ca, const char* san, const char* usage) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  if (org != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org),
                               -1, -1, 0);
  }
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* issuer_cert = issuer != nullptr ? issuer : cert;
  if (ca) {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, issuer_cert, NID_ext_key_usage, usage);
    if (san != nullptr) AddExtension(cert, issuer_cert, NID_subject_alt_name, san);
  }
  X509_sign(cert, signer, EVP_sha256());
  return cert;
}

class SocketChunkWriter final : public ChunkWriter {
 public:
  explicit SocketChunkWriter(std::function<bool(const std::string&)> write)
      : write_(std::move(write)) {}
  bool Write(const std::string& chunk) override { return write_(chunk); }

 private:
  std::function<bool(const std::string&)> write_;
};

}  // namespace

TestPki MakeTestPki() {
  TestPki pki;
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* server_key = EVP_EC_gen("P-256");
  EVP_PKEY* client_key = EVP_EC_gen("P-256");
  X509* ca = MakeCert(ca_key, "test-ca", nullptr, nullptr, ca_key, 1, true, nullptr, nullptr);
  X509* server = MakeCert(server_key, "127.0.0.1", nullptr, ca, ca_key, 2, false,
                          "IP:127.0.0.1,DNS:localhost", "serverAuth");
  X509* client =
      MakeCert(client_key, "tester", "testers", ca, ca_key, 3, false, nullptr, "clientAuth");
  pki.ca_pem = ToPem(ca);
  pki.server_cert_pem = ToPem(server);
  pki.server_key_pem = ToPem(server_key);
  pki.client_cert_pem = ToPem(client);
  pki.client_key_pem = ToPem(client_key);
  X509_free(ca);
  X509_free(server);
  X509_free(client);
  EVP_PKEY_free(ca_key);
  EVP_PKEY_free(server_key);
  EVP_PKEY_free(client_key);
  return pki;
}

struct TestServer::Impl {
  Handler handler;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::unique_ptr<ssl::context> ctx;
  std::thread accept_thread;
  std::vector<std::thread> connection_threads DRAPLANE_GUARDED_BY(mu);
  mutable Mutex mu;
  std::vector<TestRequest> requests DRAPLANE_GUARDED_BY(mu);
  std::set<int> open_fds DRAPLANE_GUARDED_BY(mu);
  std::string last_client_cn DRAPLANE_GUARDED_BY(mu);
  std::atomic<bool> stopping{false};
  TestServer* owner = nullptr;

  template <typename Stream>
  void Serve(Stream& stream, int index) {
    beast::flat_buffer buffer;
    while (!stopping.load()) {
      http::request<http::string_body> req;
      beast::error_code ec;
      http::read(stream, buffer, req, ec);
      if (ec) return;
      TestRequest tr;
      tr.method = std::string(req.method_string());
      tr.target = std::string(req.target());
      tr.body = req.body();
      tr.content_type = std::string(req[http::field::content_type]);
      tr.authorization = std::string(req[http::field::authorization]);
      tr.connection_index = index;
      {
        MutexLock lock(mu);
        requests.push_back(tr);
      }
      TestResponse response = handler(tr);
      if (response.stream) {
        http::response<http::empty_body> res{static_cast<http::status>(response.status), 11};
        res.set(http::field::content_type, response.content_type);
        res.chunked(true);
        http::response_serializer<http::empty_body> sr{res};
        http::write_header(stream, sr, ec);
        if (ec) return;
        SocketChunkWriter writer([&](const std::string& chunk) {
          beast::error_code e;
          asio::write(stream, http::make_chunk(asio::buffer(chunk)), e);
          return !e;
        });
        response.stream(writer);
        asio::write(stream, http::make_chunk_last(), ec);
        return;  // streamed responses end the connection
      }
      http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
      res.set(http::field::content_type, response.content_type);
      res.body() = response.body;
      res.keep_alive(!response.close);
      res.prepare_payload();
      http::write(stream, res, ec);
      if (ec || response.close || response.drop) return;
    }
  }

  void Accept() {
    while (!stopping.load()) {
      beast::error_code ec;
      tcp::socket socket(ioc);
      acceptor.accept(socket, ec);
      if (ec || stopping.load()) return;
      int index = owner->connections_.fetch_add(1);
      MutexLock lock(mu);
      connection_threads.emplace_back([this, s = std::move(socket), index]() mutable {
        int fd = s.native_handle();
        {
          MutexLock l(mu);
          open_fds.insert(fd);
        }
        if (ctx) {
          beast::ssl_stream<tcp::socket> tls(std::move(s), *ctx);
          beast::error_code e;
          tls.handshake(ssl::stream_base::server, e);
          if (!e) {
            if (X509* peer = SSL_get1_peer_certificate(tls.native_handle())) {
              char cn[256] = {0};
              X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
              X509_free(peer);
              MutexLock l(mu);
              last_client_cn = cn;
            }
            Serve(tls, index);
          }
          beast::error_code ignored;
          tls.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
        } else {
          Serve(s, index);
          beast::error_code ignored;
          s.shutdown(tcp::socket::shutdown_both, ignored);
        }
        MutexLock l(mu);
        open_fds.erase(fd);
      });
    }
  }
};

TestServer::TestServer(Handler handler, const TestPki* pki) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->owner = this;
  if (pki != nullptr) {
    impl_->ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
    impl_->ctx->use_certificate_chain(asio::buffer(pki->server_cert_pem));
    impl_->ctx->use_private_key(asio::buffer(pki->server_key_pem), ssl::context::pem);
    impl_->ctx->add_certificate_authority(asio::buffer(pki->ca_pem));
    impl_->ctx->set_verify_mode(ssl::verify_peer);
  }
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->accept_thread = std::thread([this] { impl_->Accept(); });
}

TestServer::~TestServer() {
  impl_->stopping.store(true);
  {
    MutexLock lock(impl_->mu);
    for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  // shutdown() wakes the blocked accept(); the acceptor is closed only once its thread is gone
  // (closing it while accept() runs on it is a data race ThreadSanitizer reports).
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->accept_thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  std::vector<std::thread> threads;
  {
    MutexLock lock(impl_->mu);
    threads.swap(impl_->connection_threads);
  }
  for (std::thread& t : threads) t.join();
}

std::string TestServer::url() const {
  return std::string(impl_->ctx ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
}

std::vector<TestRequest> TestServer::Requests() const {
  MutexLock lock(impl_->mu);
  return impl_->requests;
}

std::string TestServer::last_client_cn() const {
  MutexLock lock(impl_->mu);
  return impl_->last_client_cn;
}

}  // namespace draplane::client::internal
