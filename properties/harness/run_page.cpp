#include <fmt/format.h>

#include "properties/harness/run_page_assets.h"  // generated at build time from run_page.{html,css,js}
#include "properties/harness/run_views.h"

namespace kvsim {
namespace {

// JSON inside <script>: "</" would end the element early.
std::string script_safe(std::string json) {
    for (std::size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3))
        json.replace(at, 2, "<\\/");
    return json;
}

std::string html_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            default: out += c;
        }
    }
    return out;
}

void fill(std::string& page, std::string_view placeholder, std::string_view value) {
    const std::size_t at = page.find(placeholder);
    if (at != std::string::npos) page.replace(at, placeholder.size(), value);
}

}  // namespace

std::string run_page_html(const RunViewInput& input) {
    const CausalSlice slice = input.result.findings.empty()
                                  ? CausalSlice{}
                                  : causal_slice(input.trace, input.result, input.result.findings.front());
    std::string page(kRunPageHtml);
    const std::string title = fmt::format("kvsim {} {} {}", input.trace_path, input.variant,
                                          input.result.signature.empty() ? "pass" : input.result.signature);
    fill(page, "{{TITLE}}", html_escape(title));
    fill(page, "{{CSS}}", kRunPageCss);
    // The data goes in before the script, so no placeholder text inside the script is replaced.
    fill(page, "{{DATA}}", script_safe(run_view_json(input, slice).dump()));
    const std::size_t js_at = page.rfind("{{JS}}");
    if (js_at != std::string::npos) page.replace(js_at, 6, kRunPageJs);
    return page;
}

}  // namespace kvsim
