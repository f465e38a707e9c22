// Reads length-prefixed texts (u32 count, then u32 len + bytes each) from
// argv[2] and prints, per text, three lines: the space-separated ids from
// llama_tokenize(vocab, text, add_special=false, parse_special=true) on a
// vocab-only load of argv[1], then the hex bytes of
// llama_detokenize(vocab, ids, remove_special=false, unparse_special=true)
// and of llama_detokenize(vocab, ids, remove_special=true,
// unparse_special=false). "ERR" on failure.
#include "llama.h"
#include <cstdio>
#include <cstdint>
#include <vector>
#include <string>
#include <fstream>
#include <iterator>
#include <cstring>

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s vocab.gguf texts.bin\n", argv[0]); return 2; }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    std::ifstream f(argv[2], std::ios::binary);
    std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    auto rd = [&](uint32_t & x) { if (pos + 4 > buf.size()) return false; memcpy(&x, &buf[pos], 4); pos += 4; return true; };
    uint32_t n = 0; rd(n);
    std::vector<llama_token> toks;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = 0; rd(len);
        std::string text(&buf[pos], len); pos += len;
        toks.resize(text.size() * 2 + 16);
        int k = llama_tokenize(vocab, text.data(), (int32_t) text.size(), toks.data(), (int32_t) toks.size(), false, true);
        if (k < 0) { toks.resize(-k); k = llama_tokenize(vocab, text.data(), (int32_t) text.size(), toks.data(), (int32_t) toks.size(), false, true); }
        if (k < 0) { printf("ERR\n"); continue; }
        for (int j = 0; j < k; j++) printf(j ? " %d" : "%d", toks[j]);
        printf("\n");
        for (int skip = 0; skip < 2; skip++) {
            std::vector<char> out(text.size() * 4 + (size_t) k * 64 + 64);
            int m = llama_detokenize(vocab, toks.data(), k, out.data(), (int32_t) out.size(), skip == 1, skip == 0);
            if (m < 0) { printf("ERR\n"); continue; }
            for (int j = 0; j < m; j++) printf("%02x", (unsigned char) out[j]);
            printf("\n");
        }
    }
    llama_model_free(model);
    return 0;
}
