-- Drives Neovim's built-in LSP client against `pipewright lsp` (crates/pipewright/tests/lsp_cli.rs).
-- Reads PIPEWRIGHT (the binary), LSP_FILE (the file to open) and LSP_OUT (where the JSON
-- results go) from the environment; always quits, with a non-zero status on any failure.
local out_path = os.getenv("LSP_OUT")
local function finish(result, status)
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd(status == 0 and "qa!" or "cq!")
end

local ok, err = pcall(function()
  local file = os.getenv("LSP_FILE")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client = vim.lsp.start_client({
    name = "pipewright",
    cmd = { os.getenv("PIPEWRIGHT"), "lsp" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
  })
  assert(client, "the language server did not start")
  vim.lsp.buf_attach_client(buf, client)
  local got = vim.wait(20000, function()
    return #vim.diagnostic.get(buf) > 0
  end, 50)
  assert(got, "no diagnostics within 20 s")
  local diags = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(diags, { lnum = d.lnum, col = d.col, code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code), severity = d.severity, message = d.message })
  end
  local uri = vim.uri_from_bufnr(buf)
  local function ask(method, line, character)
    local params = { textDocument = { uri = uri }, position = { line = line, character = character } }
    local answers = vim.lsp.buf_request_sync(buf, method, params, 20000)
    assert(answers, method .. ": no answer")
    for _, a in pairs(answers) do
      assert(not a.err, method .. ": " .. vim.inspect(a.err))
      return a.result
    end
  end
  local hover = ask("textDocument/hover", 5, 5)
  local definition = ask("textDocument/definition", 5, 25)
  finish({ diagnostics = diags, hover = hover, definition = definition }, 0)
end)
if not ok then
  finish({ error = tostring(err) }, 1)
end
